"""ASGI entry point: HTTP through Django, websockets through Channels (authenticated)."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ctxlab.settings")

# Populate the app registry before anything imports models (consumers, routing).
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from ctxlab.serving.abandon import AbandonWatch  # noqa: E402
from ctxlab.serving.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        # A client that disconnects flags its request: long views stop (ctxlab.serving.abandon).
        # (django-stubs types ASGIHandler with dict scopes, the ASGI spec with mappings.)
        "http": AbandonWatch(django_asgi_app),  # type: ignore[arg-type]
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
        ),
    }
)
