# Hand-written for the ruby sample: gems installed in the full image, copied to the slim one.
FROM ruby:3.3-bookworm AS build
ENV BUNDLE_DEPLOYMENT=1 BUNDLE_WITHOUT=development:test BUNDLE_PATH=/usr/local/bundle
WORKDIR /app
COPY Gemfile Gemfile.lock ./
RUN bundle install

FROM ruby:3.3-slim-bookworm
RUN useradd --system --uid 10001 --no-create-home app
ENV BUNDLE_DEPLOYMENT=1 BUNDLE_WITHOUT=development:test BUNDLE_PATH=/usr/local/bundle RACK_ENV=production PORT=3000
COPY --from=build /usr/local/bundle /usr/local/bundle
WORKDIR /app
COPY --chown=app:app Gemfile Gemfile.lock app.rb ./
USER app
EXPOSE 3000
CMD ["bundle", "exec", "ruby", "app.rb", "-o", "0.0.0.0", "-p", "3000"]
