# kvplan: a stateless HTTP service. Build: docker build -t kvplan . ; run: docker run -p 8000:8000 kvplan
# Stage 1 builds a virtual environment from the locked requirements, with the simulator's hot
# modules compiled by mypyc (service/kvplan/compiled.py); stage 2 copies only that environment.
FROM python:3.11.11-slim-bookworm AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
# A C compiler for mypyc, in this stage only. Debian's security updates move these versions, so
# they are not pinned (tests/deploy/test_image_steps.py compares the build these steps make with
# its Python source).
# hadolint ignore=DL3008
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev && rm -rf /var/lib/apt/lists/*
WORKDIR /src
RUN python -m venv /opt/kvplan
COPY requirements.lock ./
RUN /opt/kvplan/bin/pip install --require-hashes -r requirements.lock
# mypyc, in a throwaway environment beside the service's (mypy is not a runtime dependency)
COPY requirements-build.lock ./
RUN python -m venv tools && tools/bin/pip install --require-hashes -r requirements-build.lock
COPY pyproject.toml README.md ./
COPY service ./service
RUN /opt/kvplan/bin/pip install --no-deps . && /opt/kvplan/bin/python -m compileall -q /opt/kvplan
RUN PYTHONPATH="$(tools/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" \
    /opt/kvplan/bin/kvplan compiled build

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
