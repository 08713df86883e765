#!/bin/sh
export DB_PASSWORD={{ENV_PASSWORD}}
echo "//registry.npmjs.org/:_authToken={{NPM_TOKEN}}" > ~/.npmrc
exec ./server --port 8080
