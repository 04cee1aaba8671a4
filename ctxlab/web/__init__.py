"""What every app's pages share: HTTP helpers, ownership checks, redirects, the display
filters, plots, the report shell, middleware, storage error pages, static finders and the
admin for large tables."""
