"""Root URLconf. Each app owns its full paths (/transcripts/, /runs/, ...)."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from ctxlab import views

admin.site.site_header = "ctxlab administration"
admin.site.site_title = "ctxlab admin"

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("admin/", admin.site.urls),
    path("", include("sessions_app.urls")),
    path("", include("replay_app.urls")),
]
