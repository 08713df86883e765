"""Credential forms generated from the documented formats of the secret rules (the betterleaks rule set that
kingfisher ships, plus the assignment layer), each with a fresh random value, placed in many file types.

Nothing here is a real key: every value is drawn at test time from a seeded generator, and the literal prefixes
(`ghp_`, `dop_v1_`, …) are never followed by a value in this file. A form is a vendor format (`parts`: literal
prefixes and random runs of a character class), the name it is usually set under, and optionally the setting it
sits in (`wrap`, e.g. a URL with a password or a connection string).
"""

from __future__ import annotations

import base64
import json
import random
import string
from dataclasses import dataclass

# Character classes of the documented formats.
HEX = "0123456789abcdef"
HEXU = "0123456789ABCDEF"
DIG = string.digits
ALNUM = string.ascii_letters + string.digits
LOWNUM = string.ascii_lowercase + string.digits
UPNUM = string.ascii_uppercase + string.digits
B64 = ALNUM + "+/"
URL = ALNUM + "_-"
B32 = string.ascii_uppercase + "234567"
LETTERS = string.ascii_letters
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"
B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
AH = "0123456789abcdefgh"  # Mailgun signing keys and Flutterwave keys use a-h


def r(chars: str, n: int) -> tuple[str, int]:
    return (chars, n)


UUID = (r(HEX, 8), "-", r(HEX, 4), "-", r(HEX, 4), "-", r(HEX, 4), "-", r(HEX, 12))
UUIDU = (r(HEXU, 8), "-", r(HEXU, 4), "-", r(HEXU, 4), "-", r(HEXU, 4), "-", r(HEXU, 12))


@dataclass(frozen=True)
class Form:
    """One credential format: `kind` for messages, `name` it is set under, `parts` of its value."""

    kind: str
    name: str
    parts: tuple
    wrap: str = "{}"
    multiline: bool = False


def _key_block(kind: str) -> tuple:
    edge = "-" * 5
    body = tuple(part for _ in range(6) for part in (r(B64, 64), "\n"))
    return (f"{edge}BEGIN {kind}{edge}\n", *body, r(B64, 24), "=\n", f"{edge}END {kind}{edge}")


FORMS: tuple[Form, ...] = (
    # Cloud providers
    Form("AWS access key id", "AWS_ACCESS_KEY_ID", ("AK" "IA", r(B32, 16))),
    Form("AWS secret key, unquoted", "AWS_SECRET_ACCESS_KEY", (r(B64, 40),)),
    Form("AWS session token", "AWS_SESSION_TOKEN", ("IQoJb3JpZ2lu", r(B64, 300))),
    Form("Amazon Bedrock key", "BEDROCK_API_KEY", ("AB" "SK", r(B64, 132))),
    Form("Google API key", "GOOGLE_API_KEY", ("AI" "za", r(URL, 35))),
    Form("Gemini key", "GEMINI_KEY", ("AQ.Ab8RN6", r(URL, 44))),
    Form("Google OAuth client secret", "GOOGLE_CLIENT_SECRET", ("GOC" "SPX-", r(URL, 28))),
    Form("Azure storage connection string", "AZURE_STORAGE_CONNECTION_STRING", (r(B64, 86), "=="),
         "DefaultEndpointsProtocol=https;AccountName=ordersprod;AccountKey={};EndpointSuffix=core.windows.net"),
    Form("Azure AD client secret", "AZURE_CLIENT_SECRET", (r(ALNUM, 3), r(DIG, 1), "Q~", r(URL, 34))),
    Form("Azure Service Bus connection string", "SERVICEBUS_CONNECTION", (r(B64, 43), "="),
         "Endpoint=sb://orders.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;"
         "SharedAccessKey={}"),
    Form("Azure App Configuration connection string", "APPCONFIG_CONNECTION", (r(B64, 44),),
         "Endpoint=https://orders.azconfig.io;Id=Ab1c-l9-s0:Xy12;Secret={}"),
    Form("Alibaba access key id", "ALIBABA_ACCESS_KEY_ID", ("LT" "AI", r(ALNUM, 20))),
    Form("Alibaba secret", "ALIBABA_ACCESS_KEY_SECRET", (r(ALNUM, 30),)),
    Form("DigitalOcean token", "DIGITALOCEAN_TOKEN", ("dop" "_v1_", r(HEX, 64))),
    Form("DigitalOcean OAuth token", "DO_OAUTH_TOKEN", ("doo" "_v1_", r(HEX, 64))),
    Form("DigitalOcean refresh token", "DO_REFRESH", ("dor" "_v1_", r(HEX, 64))),
    Form("Heroku API key (UUID)", "HEROKU_API_KEY", UUID),
    Form("Heroku platform key", "HEROKU_PLATFORM_KEY", ("HRKU-" "AA", r(URL, 58))),
    Form("Fly.io token", "FLY_API_TOKEN", ("FlyV1 ", r(B64, 120))),
    Form("Vercel token", "VERCEL_TOKEN", (r(ALNUM, 24),)),
    Form("Vercel personal token", "VERCEL_PAT", ("vcp" "_", r(URL, 56))),
    Form("Netlify token", "NETLIFY_AUTH_TOKEN", (r(URL, 43),)),
    Form("Render key", "RENDER_KEY", ("rnd" "_", r(ALNUM, 28))),
    Form("Supabase management token", "SUPABASE_ACCESS", ("sbp" "_", r(LOWNUM, 40))),
    Form("Supabase secret key", "SUPABASE_SERVICE", ("sb_se" "cret_", r(URL, 31))),
    Form("Cloudflare API token", "CLOUDFLARE_API_TOKEN", (r(URL, 40),)),
    Form("Cloudflare user token", "CF_USER", ("cf" "ut_", r(ALNUM, 40), r(HEX, 8))),
    Form("Cloudflare global key", "CLOUDFLARE_GLOBAL_API_KEY", (r(HEX, 37),)),
    Form("Cloudflare origin CA key", "ORIGIN_CA", ("v1.0-", r(HEX, 24), "-", r(HEX, 146))),
    Form("Scaleway secret key", "SCW_SECRET_KEY", UUID),
    Form("Vultr key", "VULTR_API_KEY", (r(HEX, 36),)),
    Form("Civo key", "CIVO_TOKEN", (r(LOWNUM, 50),)),
    Form("Exoscale key", "EXOSCALE_KEY", ("EXO", r(ALNUM, 24))),
    Form("IBM Cloud key", "IBMCLOUD_API_KEY", (r(URL, 44),)),
    Form("Tailscale key", "TS_API_KEY", ("tskey" "-api-", r(URL, 30))),
    Form("ngrok authtoken", "NGROK_AUTHTOKEN", ("2", r(ALNUM, 26), "_", r(DIG, 1), r(ALNUM, 20))),
    Form("Terraform Cloud token", "TFE_TOKEN", (r(LOWNUM, 14), ".atlas" "v1.", r(URL, 66))),
    Form("Vault service token", "VAULT_TOKEN", ("hv" "s.", r(URL, 100))),
    Form("Vault batch token", "VAULT_BATCH", ("hv" "b.", r(URL, 150))),
    Form("Doppler token", "DOPPLER_TOKEN", ("dp." "pt.", r(ALNUM, 43))),
    Form("Pulumi token", "PULUMI_ACCESS_TOKEN", ("pul" "-", r(HEX, 40))),
    Form("HCP client secret", "HCP_CLIENT_SECRET", (r(URL, 64),)),
    # Source control, CI and registries
    Form("GitHub personal token", "GITHUB_TOKEN", ("gh" "p_", r(ALNUM, 36))),
    Form("GitHub OAuth token", "GH_OAUTH", ("gh" "o_", r(ALNUM, 36))),
    Form("GitHub app token", "GH_APP", ("gh" "s_", r(ALNUM, 36))),
    Form("GitHub refresh token", "GH_REFRESH", ("gh" "r_", r(ALNUM, 36))),
    Form("GitHub fine-grained token", "GH_PAT", ("github" "_pat_", r(ALNUM + "_", 82))),
    Form("GitLab personal token", "GITLAB_TOKEN", ("gl" "pat-", r(URL, 20))),
    Form("GitLab deploy token", "GL_DEPLOY", ("gl" "dt-", r(URL, 20))),
    Form("GitLab runner token", "GL_RUNNER", ("gl" "rt-", r(URL, 20))),
    Form("GitLab trigger token", "GL_TRIGGER", ("gl" "ptt-", r(HEX, 40))),
    Form("GitLab runner registration", "GL_REGISTRATION", ("GR13" "48941", r(URL, 20))),
    Form("GitLab OAuth secret", "GL_APP", ("gl" "oas-", r(URL, 64))),
    Form("GitLab feed token", "GL_FEED", ("gl" "ft-", r(URL, 20))),
    Form("GitLab agent token", "GL_AGENT", ("gl" "agent-", r(URL, 50))),
    Form("Bitbucket client secret", "BITBUCKET_CLIENT_SECRET", (r(URL, 64),)),
    Form("Bitbucket Data Center token", "BBDC", ("BB" "DC-", r(B64, 44))),
    Form("CircleCI personal token", "CIRCLE_PAT", ("CCI" "PAT_", r(ALNUM, 22), "_", r(HEX, 40))),
    Form("CircleCI project token", "CIRCLE_PROJECT", ("CCI" "PRJ_", r(ALNUM, 22), "_", r(HEX, 40))),
    Form("Buildkite token", "BUILDKITE", ("bk" "ua_", r(LOWNUM, 40))),
    Form("Travis CI token", "TRAVIS_API_TOKEN", (r(LOWNUM, 22),)),
    Form("Codecov token", "CODECOV_TOKEN", UUIDU),
    Form("SonarQube token", "SONAR_TOKEN", ("sq" "u_", r(HEX, 40))),
    Form("Snyk token", "SNYK_TOKEN", UUID),
    Form("Drone CI token", "DRONECI_TOKEN", (r(LOWNUM, 32),)),
    Form("Sourcegraph token", "SRC_ACCESS", ("sg" "p_", r(HEX, 16), "_", r(HEX, 40))),
    Form("Atlassian API token", "ATLASSIAN", ("ATAT" "T3", r(URL, 180))),
    Form("Artifactory API key", "ARTIFACTORY", ("AK" "Cp", r(ALNUM, 69))),
    Form("Artifactory reference token", "JFROG_REF", ("cm" "Vmd", r(ALNUM, 59))),
    Form("Octopus Deploy key", "OCTOPUS", ("API-", r(UPNUM, 26))),
    Form("Harness token", "HARNESS", ("pat.", r(URL, 22), ".", r(HEX, 24), ".", r(ALNUM, 20))),
    Form("Docker Hub token", "DOCKERHUB", ("dckr" "_pat_", r(URL, 27))),
    Form("npm token", "NPM_TOKEN", ("np" "m_", r(ALNUM, 36))),
    Form("PyPI token", "PYPI", ("pypi-AgEIcHlw" "aS5vcmc", r(URL, 70))),
    Form("RubyGems key", "GEM_HOST", ("rubygems" "_", r(HEX, 48))),
    Form("crates.io token", "CRATES_IO_TOKEN", ("cio", r(ALNUM, 32))),
    Form("Clojars token", "CLOJARS", ("CLOJARS" "_", r(LOWNUM, 60))),
    Form("Packagist token", "PACKAGIST", ("packagist" "_out_", r(HEX, 68))),
    Form("Hugging Face token", "HF", ("hf" "_", r(LETTERS, 34))),
    Form("Hugging Face org token", "HF_ORG", ("api" "_org_", r(LETTERS, 34))),
    # AI services
    Form("OpenAI project key", "OPENAI", ("sk-" "proj-", r(URL, 74), "T3Blbk" "FJ", r(URL, 74))),
    Form("OpenAI legacy key", "OPENAI_LEGACY", ("sk-", r(ALNUM, 20), "T3Blbk" "FJ", r(ALNUM, 20))),
    Form("OpenAI service key", "OPENAI_SVC", ("sk-" "svcacct-", r(URL, 58), "T3Blbk" "FJ", r(URL, 58))),
    Form("Anthropic key", "ANTHROPIC", ("sk-" "ant-api03-", r(URL, 93), "AA")),
    Form("Anthropic admin key", "ANTHROPIC_ADMIN", ("sk-" "ant-admin01-", r(URL, 93), "AA")),
    Form("Groq key", "GROQ", ("gs" "k_", r(ALNUM, 52))),
    Form("Perplexity key", "PPLX", ("pp" "lx-", r(ALNUM, 48))),
    Form("xAI key", "XAI", ("xa" "i-", r(ALNUM, 80))),
    Form("OpenRouter key", "OPENROUTER", ("sk-" "or-v1-", r(HEX, 64))),
    Form("Mistral key", "MISTRAL_API_KEY", (r(ALNUM, 32),)),
    Form("Cohere key", "COHERE_API_KEY", (r(ALNUM, 40),)),
    Form("DeepSeek key", "DEEPSEEK", ("sk-", r(HEX, 32))),
    Form("Replicate token", "REPLICATE", ("r8" "_", r(ALNUM, 37))),
    Form("Cerebras key", "CEREBRAS", ("cs" "k-", r(LOWNUM, 48))),
    Form("Vercel AI gateway key", "AI_GATEWAY", ("vc" "k_", r(URL, 56))),
    Form("LangSmith token", "LANGSMITH_API_KEY", ("lsv2" "_pt_", r(HEX, 32), "_", r(HEX, 10))),
    Form("Weights & Biases key", "WANDB_API_KEY", (r(HEX, 40),)),
    Form("ElevenLabs key", "ELEVENLABS_API_KEY", ("sk_", r(HEX, 48))),
    Form("AssemblyAI key", "ASSEMBLYAI_API_KEY", (r(LOWNUM, 32),)),
    Form("Deepgram key", "DEEPGRAM_API_KEY", (r(HEX, 40),)),
    Form("Pinecone key", "PINECONE", ("pc" "sk_", r(ALNUM, 5), "_", r(ALNUM, 63))),
    Form("Voyage AI key", "VOYAGE", ("pa-", r(URL, 43))),
    # Messaging and mail
    Form("Slack bot token", "SLACK_BOT_TOKEN", ("xo" "xb-", r(DIG, 11), "-", r(DIG, 12), "-", r(ALNUM, 24))),
    Form("Slack user token", "SLACK_USER", ("xo" "xp-", r(DIG, 11), "-", r(DIG, 11), "-", r(DIG, 12), "-",
                                             r(HEX, 32))),
    Form("Slack app token", "SLACK_APP", ("xa" "pp-1-", r(UPNUM, 11), "-", r(DIG, 13), "-", r(HEX, 64))),
    Form("Slack webhook", "SLACK_WEBHOOK", ("T", r(UPNUM, 10), "/B", r(UPNUM, 10), "/", r(ALNUM, 24)),
         "https://hooks.slack.com/services/{}"),
    Form("Microsoft Teams webhook", "TEAMS_WEBHOOK", (*UUID, "@", *UUID, "/IncomingWebhook/", r(HEX, 32), "/", *UUID),
         "https://orders.webhook.office.com/webhookb2/{}"),
    Form("Discord bot token", "DISCORD_BOT_TOKEN", ("M", r(ALNUM, 23), ".", r(URL, 6), ".", r(URL, 27))),
    Form("Telegram bot token", "TELEGRAM_BOT_TOKEN", (r(DIG, 10), ":AA", r(URL, 33))),
    Form("Twilio API key", "TWILIO_API_KEY", ("SK", r(HEX, 32))),
    Form("Twilio auth token", "TWILIO_AUTH_TOKEN", (r(HEX, 32),)),
    Form("SendGrid key", "SENDGRID", ("SG.", r(URL, 22), ".", r(URL, 43))),
    Form("Mailgun key", "MAILGUN_API_KEY", ("key-", r(HEX, 32))),
    Form("Mailgun signing key", "MAILGUN_SIGNING_KEY", (r(AH, 32), "-", r(AH, 8), "-", r(AH, 8))),
    Form("Mailchimp key", "MAILCHIMP_API_KEY", (r(HEX, 32), "-us", r(DIG, 2))),
    Form("Postmark token", "POSTMARK_SERVER_TOKEN", UUID),
    Form("Brevo key", "BREVO", ("xkey" "sib-", r(HEX, 64), "-", r(ALNUM, 16))),
    Form("MessageBird key", "MESSAGEBIRD_ACCESS_KEY", (r(LOWNUM, 25),)),
    Form("Mattermost token", "MATTERMOST_TOKEN", (r(LOWNUM, 26),)),
    Form("Intercom token", "INTERCOM_ACCESS_TOKEN", (r(URL, 60),)),
    Form("Zendesk token", "ZENDESK_API_TOKEN", (r(LOWNUM, 40),)),
    Form("Resend key", "RESEND", ("re_", r(B58, 8), "_", r(B58, 24))),
    # Payments and commerce
    Form("Stripe live key", "STRIPE_SECRET_KEY", ("sk_" "live_", r(ALNUM, 24))),
    Form("Stripe restricted key", "STRIPE_RESTRICTED", ("rk_" "live_", r(ALNUM, 24))),
    Form("Stripe test key", "STRIPE_TEST", ("sk_" "test_", r(ALNUM, 24))),
    Form("Stripe webhook secret", "STRIPE_WEBHOOK_SECRET", ("wh" "sec_", r(ALNUM, 32))),
    Form("Square access token", "SQUARE", ("EA" "AA", r(URL, 60))),
    Form("Square sandbox token", "SQUARE_SANDBOX", ("sq0" "atp-", r(URL, 22))),
    Form("Square OAuth secret", "SQUARE_OAUTH", ("sq0" "csp-", r(URL, 43))),
    Form("Shopify access token", "SHOPIFY", ("shp" "at_", r(HEX, 32))),
    Form("Shopify shared secret", "SHOPIFY_SHARED", ("shp" "ss_", r(HEX, 32))),
    Form("Shopify custom app token", "SHOPIFY_CUSTOM", ("shp" "ca_", r(HEX, 32))),
    Form("Plaid access token", "PLAID_ACCESS_TOKEN", ("access-production-", *UUID)),
    Form("Plaid secret", "PLAID_SECRET", (r(LOWNUM, 30),)),
    Form("Flutterwave secret key", "FLW", ("FLWSECK" "_TEST-", r(AH, 32), "-X")),
    Form("GoCardless token", "GOCARDLESS_ACCESS_TOKEN", ("live_", r(URL, 40))),
    Form("Coinbase secret", "COINBASE_API_SECRET", (r(URL, 64),)),
    Form("Shippo token", "SHIPPO", ("shippo" "_live_", r(HEX, 40))),
    Form("EasyPost key", "EASYPOST", ("EZ" "AK", r(ALNUM, 54))),
    Form("Paddle key", "PADDLE", ("pdl" "_live_apikey_", r(LOWNUM, 26), "_", r(ALNUM, 22), "_", r(ALNUM, 3))),
    Form("Checkout.com key", "CHECKOUT_SECRET_KEY", ("sk_", *UUID)),
    Form("Lob key", "LOB_API_KEY", ("live_", r(HEX, 35))),
    # Monitoring, product and data services
    Form("Datadog API key", "DATADOG_API_KEY", (r(HEX, 32),)),
    Form("Datadog app key", "DATADOG_APP_KEY", (r(ALNUM, 40),)),
    Form("New Relic user key", "NEW_RELIC_API_KEY", ("NR" "AK-", r(UPNUM, 27))),
    Form("New Relic insert key", "NEW_RELIC_INSERT_KEY", ("NR" "II-", r(URL, 32))),
    Form("Sentry user token", "SENTRY", ("sntry" "u_", r(HEX, 64))),
    Form("Sentry auth token", "SENTRY_AUTH_TOKEN", (r(HEX, 64),)),
    Form("Grafana cloud token", "GRAFANA_CLOUD", ("gl" "c_", r(B64, 60))),
    Form("Grafana service account token", "GRAFANA_SA", ("gl" "sa_", r(ALNUM, 32), "_", r(HEX, 8))),
    Form("Dynatrace token", "DYNATRACE", ("dt0" "c01.", r(UPNUM, 24), ".", r(UPNUM, 64))),
    Form("Honeycomb key", "HONEYCOMB_API_KEY", (r(HEX, 32),)),
    Form("PostHog personal key", "POSTHOG", ("ph" "x_", r(URL, 43))),
    Form("LaunchDarkly token", "LAUNCHDARKLY_ACCESS_TOKEN", ("api-", *UUID)),
    Form("Okta token", "OKTA_API_TOKEN", ("00", r(URL, 40))),
    Form("Algolia admin key", "ALGOLIA_ADMIN_KEY", (r(HEX, 32),)),
    Form("Firebase FCM server key", "FCM_SERVER_KEY", ("AAAA", r(URL, 7), ":APA91b", r(URL, 134))),
    Form("Linear key", "LINEAR", ("lin" "_api_", r(ALNUM, 40))),
    Form("Notion token", "NOTION", ("nt" "n_", r(DIG, 11), r(ALNUM, 35))),
    Form("Notion legacy token", "NOTION_TOKEN", ("secret_", r(ALNUM, 43))),
    Form("Databricks token", "DATABRICKS", ("da" "pi", r(HEX, 32))),
    Form("Asana client secret", "ASANA_CLIENT_SECRET", (r(LOWNUM, 32),)),
    Form("Airtable token", "AIRTABLE", ("pat", r(ALNUM, 14), ".", r(HEX, 64))),
    Form("Contentful token", "CONTENTFUL_DELIVERY_TOKEN", (r(URL, 43),)),
    Form("Typeform token", "TYPEFORM_TOKEN", ("tf" "p_", r(URL, 59))),
    Form("Figma token", "FIGMA", ("fig" "d_", r(URL, 40))),
    Form("Mapbox token", "MAPBOX_TOKEN", ("pk.", r(LOWNUM, 60), ".", r(LOWNUM, 22))),
    Form("Dropbox token", "DROPBOX_ACCESS_TOKEN", ("sl.", r(URL, 135))),
    Form("Twitter bearer token", "TWITTER_BEARER_TOKEN", ("A" * 22, r(ALNUM, 80))),
    Form("Facebook page token", "FB_PAGE", ("EA" "AC", r(ALNUM, 120))),
    Form("Twitch secret", "TWITCH_CLIENT_SECRET", (r(LOWNUM, 30),)),
    Form("Yandex key", "YANDEX_API_KEY", ("AQ" "VN", r(URL, 36))),
    Form("Postman key", "POSTMAN", ("PM" "AK-", r(HEX, 24), "-", r(HEX, 34))),
    Form("Prefect key", "PREFECT", ("pn" "u_", r(ALNUM, 36))),
    # Keys, tokens and passwords without a vendor prefix
    Form("age secret key", "AGE_KEY", ("AGE-SECRET-" "KEY-1", r(BECH32, 58))),
    Form("1Password secret key", "OP_SECRET", ("A3-", r(UPNUM, 6), "-", r(UPNUM, 11), "-", r(UPNUM, 5), "-",
                                               r(UPNUM, 5), "-", r(UPNUM, 5))),
    Form("1Password service token", "OP_SERVICE", ("ops" "_eyJ", r(B64, 260))),
    Form("RSA private key", "RSA_KEY", _key_block("RSA PRIVATE KEY"), multiline=True),
    Form("OpenSSH private key", "SSH_KEY", _key_block("OPENSSH PRIVATE KEY"), multiline=True),
    Form("EC private key", "EC_KEY", _key_block("EC PRIVATE KEY"), multiline=True),
    Form("PGP private key", "PGP_KEY", _key_block("PGP PRIVATE KEY BLOCK"), multiline=True),
    Form("JSON web token", "ID_TOKEN", ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ", r(URL, 60), ".", r(URL, 43))),
    Form("Postgres URL password", "DATABASE_URL", (r(ALNUM, 18),), "postgres://orders:{}@db.corp.internal:5432/orders"),
    Form("Redis URL password", "REDIS_URL", (r(ALNUM, 20),), "redis://:{}@cache.corp.internal:6379/0"),
    Form("MongoDB URL password", "MONGODB_URI", (r(ALNUM, 20),),
         "mongodb+srv://orders:{}@cluster0.ab1cd.mongodb.net/orders"),
    Form("AMQP URL password", "BROKER_URL", (r(ALNUM, 20),), "amqp://orders:{}@mq.corp.internal:5672/"),
    Form("MySQL URL password", "MYSQL_DSN", (r(ALNUM, 20),), "mysql://orders:{}@mysql.corp.internal/orders"),
    Form("HTTPS URL password", "GIT_REMOTE", (r(ALNUM, 20),), "https://deploy:{}@git.corp.internal/orders.git"),
    Form(".netrc password", "NETRC", (r(ALNUM, 20),), "machine api.corp.internal login deploy password {}"),
    Form("kubeconfig token", "token", (r(URL, 40), ".", r(URL, 30))),
    Form("Authorization bearer header", "AUTH_HEADER", (r(ALNUM, 40),), "Authorization: Bearer {}"),
    Form("Authorization basic header", "BASIC_HEADER", ("ZGVwbG95O", r(B64, 27)), "Authorization: Basic {}"),
    Form("curl user and password", "CURL", (r(ALNUM, 18),), "curl -u deploy:{} https://api.corp.internal/v1"),
    Form("Terraform default password", "db_password", (r(ALNUM, 18),)),
    Form("Session secret (hex)", "SESSION_SECRET", (r(HEX, 64),)),
    Form("Internal API token (base64)", "INTERNAL_API_TOKEN", (r(B64, 43), "=")),
    Form("Rails secret key base", "SECRET_KEY_BASE", (r(HEX, 128),)),
    Form("Django secret key", "DJANGO_SECRET_KEY", (r(ALNUM + "!@%^*-_=+", 50),)),
    Form("JWT signing secret", "JWT_SECRET", (r(ALNUM, 32),)),
    Form("Encryption key", "ENCRYPTION_KEY", (r(B64, 43), "=")),
    Form("Database password", "DB_PASSWORD", (r(ALNUM, 16),)),
    Form("SMTP password", "SMTP_PASS", (r(ALNUM, 16),)),
    Form("LDAP bind credentials", "LDAP_BIND_CREDENTIALS", (r(ALNUM, 20),)),
    Form("Redis auth", "REDIS_AUTH", (r(ALNUM, 24),)),
    Form("Webhook signing key", "WEBHOOK_SIGNING_KEY", (r(HEX, 40),)),
    Form("OAuth client secret", "OAUTH_CLIENT_SECRET", (r(URL, 40),)),
    Form("Private API key", "privateApiKey", (r(ALNUM, 32),)),
    Form("Service credential", "serviceCredential", (r(ALNUM, 28),)),
)


@dataclass(frozen=True)
class Sample:
    """One form with its value drawn: `setting` is what sits after the name (the value, or the URL around it);
    `needles` are what must never be found anywhere (the value, and its longest random run)."""

    form: Form
    value: str
    setting: str
    needles: tuple[str, ...]


def draw(form: Form, rng: random.Random) -> Sample:
    value, runs = [], []
    for part in form.parts:
        if isinstance(part, str):
            value.append(part)
        else:
            chars, n = part
            run = "".join(rng.choice(chars) for _ in range(n))
            value.append(run)
            runs.append(run)
    text = "".join(value)
    if form.kind == "Authorization basic header":  # a real user:password, base64-encoded
        text = base64.b64encode(b"deploy:" + "".join(runs).encode()[:18]).decode()
        runs = [text]
    needles = (text,) if form.multiline else (text, max(runs, key=len))
    if form.multiline:
        needles = tuple(line for line in text.splitlines() if "-----" not in line and len(line) >= 24)
    return Sample(form, text, form.wrap.format(text), needles)


def samples(seed: int = 26) -> list[Sample]:
    rng = random.Random(seed)
    return [draw(form, rng) for form in FORMS]


# --- placing a sample in a file type ---------------------------------------------------------------------------

FILE_TYPES = ("py", "ts", "go", "yaml", "json", "toml", "tf", "sh", "md", "ini", "xml", "ipynb")


def line(sample: Sample) -> str:
    """The sample as one would write it in a note or a `.env`-style line: `NAME=setting`."""
    name, setting = sample.form.name, sample.setting
    if " " in setting and not setting.startswith(("machine ", "curl ", "Authorization")):
        return f'{name}="{setting}"'
    if setting.startswith(("machine ", "curl ", "Authorization")):
        return setting
    return f"{name}={setting}"


def place(sample: Sample, kind: str) -> str:
    """The sample written in a file of `kind`, the way that kind of file usually holds a setting."""
    name, setting = sample.form.name, sample.setting
    lower = name.lower()
    if sample.form.multiline:
        return _place_block(name, setting, kind)
    if kind == "py":
        return f'{name} = "{setting}"\n'
    if kind == "ts":
        return f'export const {name} = "{setting}";\n'
    if kind == "go":
        return f'\t{name} = "{setting}"\n'
    if kind == "yaml":
        return f"  {lower}: {json.dumps(setting) if ' ' in setting or ': ' in setting else setting}\n"
    if kind == "json":
        return f"  {json.dumps(lower)}: {json.dumps(setting)},\n"
    if kind == "toml":
        return f"{lower} = {json.dumps(setting)}\n"
    if kind == "tf":
        return f'variable "{lower}" {{\n  type      = string\n  sensitive = true\n  default   = "{setting}"\n}}\n'
    if kind == "sh":
        if setting.startswith("curl "):
            return setting + "\n"
        return f"export {name}='{setting}'\n"
    if kind == "md":
        return f"- {sample.form.kind}:\n\n  ```\n  {line(sample)}\n  ```\n"
    if kind == "ini":
        return f"{lower} = {setting}\n"
    if kind == "xml":
        escaped = setting.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
        return f'  <add key="{name}" value="{escaped}" />\n'
    if kind == "ipynb":
        return json.dumps(f'{name} = "{setting}"\n')
    raise ValueError(kind)


def _place_block(name: str, block: str, kind: str) -> str:
    lower = name.lower()
    if kind == "py":
        return f'{name} = """\n{block}\n"""\n'
    if kind == "ts":
        return f"export const {name} = `\n{block}\n`;\n"
    if kind == "go":
        return f"\t{name} = `\n{block}\n`\n"
    if kind == "yaml":
        return f"  {lower}: |\n" + "".join(f"    {row}\n" for row in block.splitlines())
    if kind == "json":
        return f"  {json.dumps(lower)}: {json.dumps(block)},\n"
    if kind == "toml":
        return f"{lower} = '''\n{block}\n'''\n"
    if kind == "tf":
        return f'variable "{lower}" {{\n  default = <<EOT\n{block}\nEOT\n}}\n'
    if kind == "sh":
        return f"cat > ~/.ssh/{lower} <<'KEY'\n{block}\nKEY\n"
    if kind == "md":
        return f"```\n{block}\n```\n"
    if kind == "ini":
        return f"{lower} =\n" + "".join(f"    {row}\n" for row in block.splitlines())
    if kind == "xml":
        return f'  <add key="{name}">\n{block}\n  </add>\n'
    if kind == "ipynb":
        return json.dumps(f'{name} = """\n{block}\n"""\n')
    raise ValueError(kind)


_HEAD = {
    "py": '"""Settings of the orders service."""\n\n', "ts": "// Settings of the orders service.\n\n",
    "go": "package config\n\n// Settings of the orders service.\nvar (\n", "yaml": "# Settings of the orders service.\nservice:\n",
    "json": "{\n", "toml": "# Settings of the orders service.\n[service]\n", "tf": "# Variables of the orders stack.\n\n",
    "sh": "#!/bin/sh\n# Start the orders service.\n", "md": "# Orders service settings\n\nThe values we use:\n\n",
    "ini": "; Settings of the orders service.\n[service]\n", "xml": '<?xml version="1.0"?>\n<configuration>\n',
    "ipynb": "",
}
_TAIL = {"go": ")\n", "json": '  "end": true\n}\n', "xml": "</configuration>\n", "sh": 'exec ./orders "$@"\n'}
FILE_NAMES = {
    "py": "src/orders/settings.py", "ts": "web/src/config.ts", "go": "internal/config/values.go",
    "yaml": "deploy/values.yaml", "json": "config/service.json", "toml": "config/service.toml",
    "tf": "infra/variables.tf", "sh": "scripts/start.sh", "md": "docs/settings.md", "ini": "config/service.ini",
    "xml": "config/App.config.xml", "ipynb": "notebooks/explore.ipynb",
}


def file_text(batch: list[Sample], kind: str) -> str:
    """A whole file of `kind` holding every sample of the batch."""
    if kind == "ipynb":
        cells = [json.loads(place(s, kind)) for s in batch]
        notebook = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                               "source": [c]} for c in cells], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
        return json.dumps(notebook, indent=1) + "\n"
    return _HEAD[kind] + "".join(place(s, kind) for s in batch) + _TAIL.get(kind, "")
