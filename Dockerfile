# Corral's own image: `corral serve`, built from this repository (`docker build -t corral .`).
# Two stages: the build stage compiles the TypeScript, the dashboard's bundle (dist/web) and SQLite's native module
# with the build tools; the image itself holds only Node, the production dependencies, dist/ and bin/, and runs as
# the unprivileged user `node`.
# NODE_IMAGE: any Debian-based Node 20.19+ image (22 and 24 work too).
ARG NODE_IMAGE=node:20-bookworm-slim

FROM ${NODE_IMAGE} AS build
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY package.json package-lock.json ./
# Scripts are skipped until the sources are here (`prepare` builds them); the native module is built next.
RUN npm ci --ignore-scripts && npm rebuild better-sqlite3
COPY tsconfig.json tsconfig.build.json ./
COPY bin ./bin
COPY src ./src
COPY web ./web
# The compiler's record of its last build (dist/.tsbuildinfo) only speeds up the next one: it stays out of the image.
RUN npm run build && rm -f dist/.tsbuildinfo && npm prune --omit=dev

FROM ${NODE_IMAGE}
ENV NODE_ENV=production \
    CORRAL_DATA_DIR=/var/lib/corral \
    CORRAL_API_ADDR=0.0.0.0:8080 \
    CORRAL_GATEWAY_ADDR=0.0.0.0:8000 \
    CORRAL_LOG_FORMAT=json
WORKDIR /app
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY --from=build /src/bin ./bin
RUN mkdir -p /var/lib/corral && chown node:node /var/lib/corral
USER node
EXPOSE 8080 8000
ENTRYPOINT ["node", "/app/bin/corral.js"]
CMD ["serve"]
