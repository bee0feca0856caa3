"""The server-rendered web UI: login sessions, CSRF, pages. Assets live in dashboards/."""
