# Hand-written for the python sample: a virtualenv filled in the full image, copied to the slim one.
FROM python:3.12-bookworm AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PATH=/opt/venv/bin:$PATH
RUN python -m venv /opt/venv
COPY requirements.txt /tmp/requirements.txt
RUN pip install -r /tmp/requirements.txt

FROM python:3.12-slim-bookworm
RUN useradd --system --uid 10001 --no-create-home app
COPY --from=build /opt/venv /opt/venv
WORKDIR /app
COPY app.py ./
ENV PATH=/opt/venv/bin:$PATH PYTHONUNBUFFERED=1 PORT=8000
USER app
EXPOSE 8000
CMD ["python", "app.py"]
