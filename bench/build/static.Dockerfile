# Hand-written for the plain static sample, to run as deployed containers may be run: as a non-root
# user, with every capability dropped and no-new-privileges. The caddy image's binary carries a file
# capability (to bind low ports) that such a container cannot exec, and a COPY may keep it: a plain
# cp in a stage of its own leaves it behind. The pages only (no dotfiles), on distroless (no shell).
FROM caddy:2-alpine AS caddy
RUN cp /usr/bin/caddy /caddy

FROM gcr.io/distroless/static-debian12
COPY --from=caddy /caddy /usr/bin/caddy
COPY index.html style.css /srv/
ENV PORT=8080 XDG_CONFIG_HOME=/tmp/caddy XDG_DATA_HOME=/tmp/caddy
USER 65532:65532
EXPOSE 8080
CMD ["/usr/bin/caddy", "file-server", "--root", "/srv", "--listen", ":8080"]
