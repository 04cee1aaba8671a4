"""Root URLconf. Each app owns its full paths (/transcripts/, /runs/, ...)."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from ctxlab import views
from ctxlab.login_throttle import ThrottledLoginView

admin.site.site_header = "ctxlab administration"
admin.site.site_title = "ctxlab admin"

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    # Login, logout and password change only: no e-mail, so no password reset by e-mail.
    path("accounts/login/", ThrottledLoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path(
        "accounts/password_change/",
        auth_views.PasswordChangeView.as_view(),
        name="password_change",
    ),
    path(
        "accounts/password_change/done/",
        auth_views.PasswordChangeDoneView.as_view(),
        name="password_change_done",
    ),
    path("admin/", admin.site.urls),
    path("", include("sessions_app.urls")),
    path("", include("replay_app.urls")),
    path("", include("judge_app.urls")),
    path("", include("suites_app.urls")),
    path("", include("prompts_app.urls")),
]
