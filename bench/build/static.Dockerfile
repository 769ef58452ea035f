# Hand-written for the plain static sample: the pages only (no dotfiles), Caddy's file server as a
# non-root user, on the caddy image as it is.
FROM caddy:2-alpine
COPY index.html style.css /srv/
ENV PORT=8080 XDG_CONFIG_HOME=/tmp/caddy XDG_DATA_HOME=/tmp/caddy
USER 65532:65532
EXPOSE 8080
CMD ["caddy", "file-server", "--root", "/srv", "--listen", ":8080"]
