// The annotator's loop: claim one item (plus one prefetched), show it with its reason,
// label with buttons or keys 1-9, skip with s, take the last answer back with u; the
// prefetched item shows at once.
(function () {
  const box = document.getElementById("labeler");
  if (!box) return;
  const queue = box.dataset.queue;
  const schema = JSON.parse(document.getElementById("schema").textContent);
  const itemEl = document.getElementById("item");
  const choicesEl = document.getElementById("choices");
  const statusEl = document.getElementById("status");
  const doneEl = document.getElementById("done");
  let current = null, buffer = [], done = 0, refilling = null, last = null;

  const options = schema.type === "categorical"
    ? schema.values.slice(0, 9)
    : Array.from({ length: Math.min(9, Math.floor(schema.max - schema.min) + 1) }, (_, i) => schema.min + i);

  options.forEach((value, i) => {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "choice";
    b.dataset.value = String(value);
    b.textContent = `${i + 1} · ${value}`;
    b.addEventListener("click", () => submit(value));
    choicesEl.appendChild(b);
  });
  const skipBtn = document.createElement("button");
  skipBtn.type = "button";
  skipBtn.textContent = "s · skip";
  skipBtn.addEventListener("click", () => skip());
  choicesEl.appendChild(skipBtn);
  const undoBtn = document.createElement("button");
  undoBtn.type = "button";
  undoBtn.id = "undo";
  undoBtn.textContent = "u · undo last";
  undoBtn.disabled = true;
  undoBtn.addEventListener("click", () => undo());
  choicesEl.appendChild(undoBtn);

  // One claim in flight at a time keeps at most two items leased ahead of the annotator.
  function refill() {
    if (refilling) return refilling;
    refilling = (async () => {
      if (buffer.length < 2) {
        const res = await telltale.api("POST", `/api/v1/queues/${encodeURIComponent(queue)}/claim`, { n: 2 - buffer.length });
        if (res.ok) buffer.push(...res.data.items);
        else statusEl.textContent = `Could not claim: ${telltale.message(res.data)}`;
      }
      refilling = null;
      if (!current) show();
    })();
    return refilling;
  }

  function el(tag, text, cls) {
    const n = document.createElement(tag);
    if (text !== undefined) n.textContent = text;
    if (cls) n.className = cls;
    return n;
  }

  function setChoices(enabled) {
    choicesEl.querySelectorAll("button.choice").forEach((b) => { b.disabled = !enabled; });
  }

  function show() {
    itemEl.innerHTML = "";
    current = buffer.shift() || null;
    itemEl.dataset.itemId = current ? current.id : "";
    if (!current) {
      itemEl.dataset.content = "";
      setChoices(false);
      itemEl.appendChild(el("p", "The queue is empty. New items arrive when the queue fills.", "muted"));
      return;
    }
    const s = current.sample;
    const labelable = s.has_content !== false;
    itemEl.dataset.content = labelable ? "yes" : "no";
    setChoices(labelable);
    itemEl.appendChild(el("p", current.why || current.reason || "", "reason"));
    if (s.image_url) {
      // The image with its caption (what the service was told it shows), if it has one.
      const fig = document.createElement("figure");
      const img = document.createElement("img");
      img.src = s.image_url;
      img.alt = s.text || s.sample_id || "sample image";
      fig.appendChild(img);
      if (s.text) fig.appendChild(el("figcaption", s.text));
      itemEl.appendChild(fig);
    } else if (s.text) {
      itemEl.appendChild(el("h3", s.trace ? "Request" : "Text"));
      itemEl.appendChild(el("pre", s.text, "content"));
    }
    if (s.trace) {
      const t = s.trace;
      itemEl.appendChild(el("p", `Trace ${t.trace_id} · ${t.agent || ""} ${t.agent_version || ""} · ${t.status || ""} · decision ${t.decision || "–"} · ${t.steps ?? "?"} steps`, "small muted"));
      const box = el("div", undefined, "conversation");
      box.appendChild(el("p", "Loading the conversation…", "muted small"));
      itemEl.appendChild(box);
      const shown = current.id;
      // Server-rendered and escaped: the trace page's own chat markup, same origin.
      fetch(`/traces/${encodeURIComponent(t.trace_id)}/conversation`, { credentials: "same-origin" })
        .then((r) => (r.ok ? r.text() : Promise.reject(r.status)))
        .then((html) => {
          if (!current || current.id !== shown) return;
          box.innerHTML = html;
          // The request and the answer are shown from the trace itself: the note that no
          // model messages were captured (and how to capture them with OTel) is not news.
          if (t.text || t.output) box.querySelectorAll(".no-messages").forEach((n) => n.remove());
        })
        .catch(() => { box.innerHTML = ""; box.appendChild(el("p", "The conversation could not be loaded.", "muted small")); });
      if (t.output) { itemEl.appendChild(el("h3", "Answer")); itemEl.appendChild(el("pre", t.output, "content answer")); }
      const a = el("a", "Open the trace (new tab)");
      a.href = `/traces/${encodeURIComponent(t.trace_id)}`;
      a.target = "_blank";
      a.rel = "noopener";
      itemEl.appendChild(a);
    }
    if (!labelable) {
      itemEl.appendChild(el("p", `This ${s.stream || ""} sample ${s.sample_id || s.key} has nothing to look at: no image, text or trace was stored with it (only its vector). It cannot be labeled; skip it with s.`, "no-content"));
    }
  }

  // The next (prefetched) item appears at once; this item's answer is sent meanwhile,
  // so fast keyboard labeling never waits for the network and never drops a key.
  async function finish(path, body, verb) {
    if (!current) return;
    const item = current;
    show();
    refill();
    const res = await telltale.api("POST", `/api/v1/queue-items/${item.id}/${path}`, body);
    if (res.ok) {
      if (verb === "labeled") { done += 1; doneEl.textContent = String(done); }
      bump(verb === "labeled" ? "labeled-count" : "skipped-count", 1);
      last = { item, verb };
      undoBtn.disabled = false;
      statusEl.textContent = `Item ${item.id} ${verb}. Press u to undo.`;
    } else {
      statusEl.textContent = `Item ${item.id} was not ${verb}: ${telltale.message(res.data)}`;
    }
  }

  function bump(id, by) {
    const n = document.getElementById(id), waiting = document.getElementById("waiting");
    const bar = document.getElementById("progress");
    if (n) n.textContent = String(Number(n.textContent) + by);
    if (waiting) waiting.textContent = String(Math.max(0, Number(waiting.textContent) - by));
    if (bar) bar.value = Number(bar.value) + by;
  }

  // The last answer comes back: the server deletes the label (and the score it wrote)
  // and leases the item to this annotator again; it shows before the one on screen.
  async function undo() {
    if (!last) return;
    const { item, verb } = last;
    last = null;
    undoBtn.disabled = true;
    const res = await telltale.api("POST", `/api/v1/queue-items/${item.id}/undo`);
    if (!res.ok) {
      statusEl.textContent = `Item ${item.id} could not be undone: ${telltale.message(res.data)}`;
      return;
    }
    if (verb === "labeled") { done -= 1; doneEl.textContent = String(done); }
    bump(verb === "labeled" ? "labeled-count" : "skipped-count", -1);
    item.lease_token = res.data.lease_token;
    if (current) buffer.unshift(current);
    buffer.unshift(item);
    current = null;
    show();
    statusEl.textContent = `Item ${item.id}: ${verb === "labeled" ? "label" : "skip"} undone; answer it again.`;
  }

  // An item with nothing to look at cannot be labeled, only skipped.
  const labelable = () => current && current.sample.has_content !== false;
  const submit = (value) => labelable() && finish("label", { lease_token: current.lease_token, label: value }, "labeled");
  const skip = () => current && finish("skip", { lease_token: current.lease_token }, "skipped");

  document.addEventListener("keydown", (ev) => {
    if (ev.target && ["INPUT", "TEXTAREA", "SELECT"].includes(ev.target.tagName)) return;
    if (ev.key === "s") { ev.preventDefault(); skip(); return; }
    if (ev.key === "u") { ev.preventDefault(); undo(); return; }
    const n = Number(ev.key);
    if (n >= 1 && n <= options.length) { ev.preventDefault(); submit(options[n - 1]); }
  });

  refill().then(refill);
})();
