# ctxlab for teams: one image for the web process and the Celery workers (compose.yaml).
# The wheel is built from this checkout (templates, static files, migrations and the
# tokenizer data inside it), then installed with the scale extras (Redis, PostgreSQL).

FROM python:3.11-slim AS build
WORKDIR /src
COPY . .
RUN pip wheel --no-cache-dir --no-deps -w /wheels .

FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 \
    CTXLAB_DATA_DIR=/data
RUN useradd --create-home --uid 1000 ctxlab && mkdir /data && chown ctxlab /data
COPY --from=build /wheels /wheels
RUN whl="$(ls /wheels/ctxlab-*.whl)" && pip install --no-cache-dir "${whl}[scale]" && rm -rf /wheels
USER ctxlab
WORKDIR /data
VOLUME /data
EXPOSE 8000
# `ctxlab serve` migrates, ensures the login (CTXLAB_USER / CTXLAB_PASSWORD) and serves with
# the request-body limits; with a Redis broker it starts no embedded worker.
CMD ["ctxlab", "serve", "0.0.0.0:8000"]
