// Acknowledge, resolve and silence from the alerts page through the JSON API.
(function () {
  const flash = document.getElementById("flash");
  document.querySelectorAll("button.act").forEach((btn) => {
    btn.addEventListener("click", async (ev) => {
      ev.preventDefault();  // a form's button: without JavaScript the form posts instead
      const id = btn.dataset.id, action = btn.dataset.action;
      btn.disabled = true;
      let res;
      if (action === "silence") {
        const matchers = [{ name: "failure_mode", op: "=", value: btn.dataset.mode }];
        if (btn.dataset.monitor) matchers.push({ name: "monitor", op: "=", value: btn.dataset.monitor });
        res = await telltale.api("POST", "/api/v1/silences", {
          matchers, duration_seconds: 4 * 3600, comment: `silenced from the UI (alert ${id})`,
        });
      } else {
        res = await telltale.api("POST", `/api/v1/alerts/${id}/${action}`);
      }
      if (!res.ok) {
        flash.textContent = `Could not ${action} alert ${id}: ${telltale.message(res.data)}`;
        btn.disabled = false;
        return;
      }
      if (action === "silence") {
        flash.textContent = `Silenced ${btn.dataset.mode} for 4 hours.`;
      } else {
        const row = document.getElementById(`alert-${id}`);
        const state = res.data.state;
        row.dataset.state = state;
        row.querySelector(".state").innerHTML = "";
        const badge = document.createElement("span");
        badge.className = `badge ${state}`;
        badge.textContent = state;
        row.querySelector(".state").appendChild(badge);
        // The same words the server writes (app/web/alert_state.py): the span the page was
        // drawn with, the acknowledgement now, by the key that is logged in.
        const span = row.dataset.openFor, me = row.closest("table").dataset.me;
        const words = state === "acknowledged" ? `open ${span} · acknowledged just now by ${me}`
          : state === "resolved" ? `was open for ${span}` : "";
        const cell = row.querySelector("td.open-for");  // the alert page's own cell
        if (cell) {
          cell.textContent = words;
        } else if (state === "acknowledged") {
          const line = document.createElement("span");
          line.className = "small open-for acked";
          line.textContent = words;
          row.querySelector(".state").appendChild(line);
        }
        row.querySelectorAll(`button[data-action="ack"]`).forEach((b) => b.remove());
        if (state === "resolved") row.querySelectorAll("button.act").forEach((b) => b.remove());
        flash.textContent = `Alert ${id} is now ${state}.`;
      }
    });
  });
})();
