# Hand-written for the node front-end sample: built with node, served by Caddy's file server on
# distroless as a non-root user. Caddy's binary is copied with cp, which leaves its file capability
# behind, so the image runs with every capability dropped (see static.Dockerfile).
FROM node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY build.mjs page.md ./
RUN npm run build

FROM caddy:2-alpine AS caddy
RUN cp /usr/bin/caddy /caddy

FROM gcr.io/distroless/static-debian12
COPY --from=caddy /caddy /usr/bin/caddy
COPY --from=build /app/dist /srv
ENV PORT=8080 XDG_CONFIG_HOME=/tmp/caddy XDG_DATA_HOME=/tmp/caddy
USER 65532:65532
EXPOSE 8080
CMD ["/usr/bin/caddy", "file-server", "--root", "/srv", "--listen", ":8080"]
