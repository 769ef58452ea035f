# The control plane's production image. No registry is needed: the base is a Debian bookworm
# root filesystem made with `debootstrap --variant=minbase` and imported with `docker import`
# (scripts/docker/build-image.sh does both, and stages this build's context).
#
# Node: bookworm's own nodejs is 18 and the code needs >= 20, so the build context carries the
# node binary of the build host (staged as `node` by the script); it is dynamically linked
# against glibc/libstdc++ only, which minbase already has.
ARG BASE_IMAGE=svc-base/debian:bookworm
FROM ${BASE_IMAGE}

# git runs clones, openssh-client serves deploy keys, ca-certificates verifies https remotes.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends git openssh-client ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /var/lib/svc --create-home svc

COPY node /usr/local/bin/node
WORKDIR /opt/svc
COPY package.json package-lock.json ./
COPY node_modules ./node_modules
COPY dist ./dist

ENV NODE_ENV=production \
    SVC_HOST=0.0.0.0 \
    SVC_PORT=9393 \
    SVC_DATA_DIR=/var/lib/svc/data \
    SVC_DOCKER_SOCKET=/var/run/docker.sock

# Runs as root only because the mounted Docker socket is root-owned; the socket is root on the
# host anyway, so a separate uid inside would add no boundary. The `svc` user is there for
# layouts that map the socket's group instead (docker run --group-add <gid> --user svc).
VOLUME ["/var/lib/svc/data"]
EXPOSE 9393
# The Node.js options of the serving process: SERVE_NODE_OPTIONS in lib/install/texts.ts.
ENTRYPOINT ["/usr/local/bin/node", "--max-semi-space-size=1", "--no-concurrent-recompilation", "/opt/svc/dist/runtime/cli.js"]
CMD ["serve"]
