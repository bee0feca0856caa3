"""Web logins shared by the pages and the JSON API: signed cookies, CSRF tokens, and the
server-side session rows behind them. Neither ``app.api`` nor ``app.web`` is imported here."""
