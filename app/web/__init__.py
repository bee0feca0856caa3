"""The server-rendered web UI: login sessions, CSRF, pages. Templates and assets live in app/web/templates and app/web/static."""
