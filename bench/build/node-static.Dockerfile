# Hand-written for the node front-end sample: built with node, served by Caddy's file server as
# a non-root user, on the caddy image as it is.
FROM node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY build.mjs page.md ./
RUN npm run build

FROM caddy:2-alpine
COPY --from=build /app/dist /srv
ENV PORT=8080 XDG_CONFIG_HOME=/tmp/caddy XDG_DATA_HOME=/tmp/caddy
USER 65532:65532
EXPOSE 8080
CMD ["caddy", "file-server", "--root", "/srv", "--listen", ":8080"]
