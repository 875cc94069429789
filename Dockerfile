# The sieve binary in a slim image. Build: docker build -t sieve .
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release -p sieve-cli

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/sieve /usr/local/bin/sieve
EXPOSE 3307
ENTRYPOINT ["sieve"]
# Listening beyond loopback needs SIEVE_PASSWORD.
CMD ["serve", "--host", "0.0.0.0"]
