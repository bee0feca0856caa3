// Calls to the JSON API from pages: the session cookie authenticates, the page's CSRF
// token (from <meta name="csrf-token">) goes in X-CSRF-Token for every unsafe method.
(function () {
  const token = document.querySelector('meta[name="csrf-token"]')?.content || "";
  window.telltale = {
    async api(method, path, body) {
      const opts = { method, headers: { "X-CSRF-Token": token }, credentials: "same-origin" };
      if (body !== undefined) {
        opts.headers["Content-Type"] = "application/json";
        opts.body = JSON.stringify(body);
      }
      const r = await fetch(path, opts);
      let data = null;
      try { data = await r.json(); } catch (e) { data = null; }
      return { ok: r.ok, status: r.status, data };
    },
    message(data) {
      if (!data) return "";
      const d = data.detail !== undefined ? data.detail : data;
      if (typeof d === "string") return d;
      return d.message || d.error || JSON.stringify(d);
    },
  };
})();
