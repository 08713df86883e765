"""Service settings (test fixture: every value below is fake and filled in at test time)."""

import os

DATABASE_URL = "postgres://app:{{URL_PASSWORD}}@db.internal:5432/orders"
API_KEY = "{{PY_API_KEY}}"
GITHUB_TOKEN = "{{GITHUB}}"
OPENAI_API_KEY = "{{OPENAI_PROJECT}}"
LEGACY_OPENAI_KEY = "{{OPENAI_LEGACY}}"
OPENAI_WITH_MARKER = "{{OPENAI_MARKED}}"
STRIPE_KEY = "{{STRIPE_TEST}}"
STRIPE_LIVE = "{{STRIPE_LIVE}}"
HF_TOKEN = "{{HF}}"
SLACK_BOT = "{{SLACK}}"
SESSION_JWT = "{{JWT}}"
AWS_ACCESS_KEY_ID = "{{AWS_ID}}"
aws_secret_access_key = "{{AWS_SECRET}}"
os.environ["DB_PASSWORD"] = "{{PY_ENV_PASSWORD}}"

# Documented example values stay: the test checks these are indexed unchanged.
EXAMPLE_KEY_ID = "AKIAIOSFODNN7EXAMPLE"
EXAMPLE_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def connect(password=None):
    """Open the orders database; `password` comes from the environment, never from code."""
    password = password or os.environ.get("DB_PASSWORD")
    return DATABASE_URL, password
