# kvplan: a stateless HTTP service. Build: docker build -t kvplan . ; run: docker run -p 8000:8000 kvplan
# Stage 1 builds a virtual environment from the locked requirements; stage 2 copies only that.
FROM python:3.11.11-slim-bookworm AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
RUN python -m venv /opt/kvplan
COPY requirements.lock ./
RUN /opt/kvplan/bin/pip install --require-hashes -r requirements.lock
COPY pyproject.toml README.md ./
COPY service ./service
RUN /opt/kvplan/bin/pip install --no-deps . && /opt/kvplan/bin/python -m compileall -q /opt/kvplan

FROM python:3.11.11-slim-bookworm
LABEL org.opencontainers.image.title="kvplan" \
      org.opencontainers.image.description="KV-cache capacity planning for vLLM, exactly as vLLM computes it"
ENV PATH=/opt/kvplan/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    KVPLAN_HOST=0.0.0.0 \
    KVPLAN_PORT=8000 \
    KVPLAN_WORKERS=1
COPY --from=build /opt/kvplan /opt/kvplan
USER 10001:10001
EXPOSE 8000
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
  CMD ["python", "-c", "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2).status == 200 else 1)"]
CMD ["kvplan", "serve", "--host", "0.0.0.0", "--port", "8000"]
