"""Serving the dashboard: the bounded Daphne server and its page processes, the embedded
Celery worker and its process pool, websocket routing, the task relay between page
processes and the front, abandoned requests, and the queries compiled once per process."""
