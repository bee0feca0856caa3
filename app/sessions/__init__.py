"""Sessions and users: the conversation a trace is a turn of, and the end user it served.

Read once at ingest (:mod:`.attributes`) into ``traces.session_id`` and ``traces.user_id``;
listed and shown turn by turn by :mod:`.store` for the API (``/api/v1/sessions``) and the
pages (:mod:`app.web.session_pages`).
"""
