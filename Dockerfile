# One image for every StudyBus process; the command chooses which one runs:
#   docker run studybus broker        docker run studybus store        docker run studybus busctl services
#
# Build stage: the official Swift image, the C libraries' headers (espeak-ng and pocketsphinx for
# ai-gateway's offline speech, cairo and pango for store's PDF export), a release build with the Swift
# runtime linked statically so the run stage needs no Swift installation.
FROM swift:6.3-bookworm AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libzmq3-dev libsqlite3-dev libcurl4-openssl-dev zlib1g-dev \
        libespeak-ng-dev libpocketsphinx-dev libcairo2-dev libpango1.0-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
RUN swift package resolve
COPY Shared Shared
COPY Services Services
COPY Benchmarks Benchmarks
COPY Tests Tests
# The commit the binaries say they are (`--version`, _health, studybus_build_info): .git is not
# in the build context, so it comes as an argument, e.g.
#   docker build --build-arg STUDYBUS_COMMIT="$(git rev-parse --short=12 HEAD)" .
# Only hex digits (and -dirty) are taken: the value is written into a C header.
ARG STUDYBUS_COMMIT=unknown
RUN commit="$(printf '%s' "$STUDYBUS_COMMIT" | tr -cd '0-9a-fA-F-' | cut -c1-40)" \
 && printf '#define STUDYBUS_BUILD_COMMIT "%s"\n' "${commit:-unknown}" > Shared/CBuildInfo/build-commit.h
# Every executable product Package.swift declares, one by one: a plain `swift build` would also
# build TestSupport, which imports Testing, a module the static standard library does not have.
# (scripts/check-compose checks that this sed finds every product.)
RUN mkdir /out \
 && bin="$(swift build -c release --show-bin-path)" \
 && for product in $(sed -n 's/.*\.executable(name: "\([^"]*\)".*/\1/p' Package.swift); do \
        swift build -c release --static-swift-stdlib --product "$product" && cp "$bin/$product" /out/ || exit 1; \
    done

# Run stage: slim Debian with the shared libraries (libxml2 for ingest's DOCX reader; espeak-ng
# with its voices, pocketsphinx with its English model and ffmpeg for ai-gateway's offline
# speech, ffmpeg also for ingest's splitting of recordings; cairo, pango and the fonts for store's PDF export: DejaVu Sans for Latin, Arabic and
# Hebrew, WenQuanYi Micro Hei for Chinese, Japanese and Korean), the extraction tools ingest
# uses, the sqlite3 shell for restores and checks (docs/operations.md),
# curl for the health checks (each process's /healthz), and a non-root user owning /data (each
# service's volume is mounted there).
FROM debian:bookworm-slim
# The version is BuildInfo.version's (scripts/check-compose compares them).
ARG STUDYBUS_COMMIT=unknown
LABEL org.opencontainers.image.title="StudyBus" \
      org.opencontainers.image.description="The StudyBus broker, services and busctl; the command chooses which runs" \
      org.opencontainers.image.version="0.24.0" \
      org.opencontainers.image.revision="${STUDYBUS_COMMIT}"
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        libzmq5 libsqlite3-0 libcurl4 libxml2 ca-certificates tzdata poppler-utils tesseract-ocr tesseract-ocr-eng sqlite3 curl \
        libespeak-ng1 espeak-ng-data libpocketsphinx3 pocketsphinx-en-us ffmpeg \
        libcairo2 libpangocairo-1.0-0 fonts-dejavu-core fonts-wqy-microhei \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 studybus \
 && useradd --system --uid 10001 --gid studybus --home-dir /data --shell /usr/sbin/nologin studybus \
 && mkdir -p /data && chown studybus:studybus /data
COPY --from=build /out/ /usr/local/bin/
USER studybus
WORKDIR /data
ENV DATA_DIR=/data LOG_FORMAT=json
# 5555–5557: the broker's bus sockets; 9464: every process's monitoring port (METRICS_ADDRESS).
EXPOSE 5555 5556 5557 9464
CMD ["broker"]
