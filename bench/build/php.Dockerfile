# Hand-written for the php sample: Composer's autoloader built apart, php-fpm on loopback behind
# Caddy (a plain copy of its binary), both run by one bash as www-data.
FROM composer:2 AS vendor
WORKDIR /app
COPY composer.json ./
COPY src/ src/
RUN composer install --no-dev --no-interaction --no-progress --optimize-autoloader --ignore-platform-reqs

FROM caddy:2-alpine AS caddy
RUN cp /usr/bin/caddy /caddy

FROM php:8.3-fpm-bookworm
COPY --from=caddy /caddy /usr/local/bin/caddy
RUN printf '%s\n' ':8080 {' '  root * /app/public' '  php_fastcgi 127.0.0.1:9000' '  file_server' '}' > /etc/Caddyfile \
 && printf '%s\n' '[www]' 'listen = 127.0.0.1:9000' > /usr/local/etc/php-fpm.d/zzz-loopback.conf
WORKDIR /app
COPY --from=vendor --chown=www-data:www-data /app/vendor vendor
COPY --chown=www-data:www-data public/ public/
COPY --chown=www-data:www-data src/ src/
ENV PORT=8080 XDG_CONFIG_HOME=/tmp/caddy XDG_DATA_HOME=/tmp/caddy
USER www-data
EXPOSE 8080
CMD ["bash", "-c", "php-fpm -F & caddy run --config /etc/Caddyfile --adapter caddyfile & wait -n"]
