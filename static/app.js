// unhold's only script: progressive enhancement, every page works without it.
// It remembers the viewer's time zone in a cookie so times render in it.
(function () {
	try {
		var tz = Intl.DateTimeFormat().resolvedOptions().timeZone;
		if (tz && document.cookie.indexOf("tz=" + encodeURIComponent(tz)) < 0) {
			document.cookie = "tz=" + encodeURIComponent(tz) + "; path=/; max-age=31536000; samesite=lax";
		}
	} catch (e) { /* an old browser keeps the server's zone */ }
	// Buttons with data-confirm ask before their form is sent.
	document.addEventListener("submit", function (ev) {
		var b = ev.submitter;
		if (b && b.dataset && b.dataset.confirm && !window.confirm(b.dataset.confirm)) {
			ev.preventDefault();
		}
	});
})();

// Live pages. A page carrying a stamp marked data-live="N" (views.LiveStamp)
// has its <main> redrawn every N seconds from the page's own URL (the same
// GET, so the same filters and the same rights), swapped in whole. It waits
// while the viewer is busy with the page — typing in a field, a field
// changed from how it was drawn, a selection, focus inside <main> — or the
// tab is hidden, or nobody has touched the page for idleMs (so an open tab
// does not keep its session alive forever against the server's idle
// limit). The toggle's choice is kept per browser. Every text comes from
// the stamp's data attributes, in the page's language. A redirect (the
// session ended) stops it.
(function () {
	if (!window.fetch || !window.DOMParser || !document.querySelector("[data-live]")) {
		return;
	}
	var idleMs = 10 * 60 * 1000;
	var storeKey = "unhold.live";
	var off = false;
	try { off = window.localStorage.getItem(storeKey) === "off"; } catch (e) { /* storage refused: on */ }
	var lastActive = Date.now();
	var ended = false, failed = false, busy = false, timer = 0;
	["keydown", "pointerdown", "pointermove", "wheel", "touchstart"].forEach(function (name) {
		document.addEventListener(name, function () { lastActive = Date.now(); }, { passive: true, capture: true });
	});

	function stamp() { return document.querySelector("[data-live]"); }
	// regionOf is what a redraw replaces: the stamp's <main>.
	function regionOf(st) { return st.closest("main") || st.parentNode; }
	function region() { return regionOf(stamp()); }
	function every() { return (parseInt(stamp().getAttribute("data-live"), 10) || 5) * 1000; }

	function isField(el) {
		return !!el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
	}
	// changed tells whether a field under root differs from how it was drawn.
	function changed(root) {
		var fields = root.querySelectorAll("input, textarea, select");
		for (var i = 0; i < fields.length; i++) {
			var f = fields[i];
			if (f.type === "checkbox" || f.type === "radio") {
				if (f.checked !== f.defaultChecked) { return true; }
			} else if (f.tagName === "SELECT") {
				for (var j = 0; j < f.options.length; j++) {
					if (f.options[j].selected !== f.options[j].defaultSelected) { return true; }
				}
			} else if (f.type !== "hidden" && f.value !== f.defaultValue) {
				return true;
			}
		}
		return false;
	}
	// withoutStamp is a region's markup but its stamp, which changes on
	// every draw.
	function withoutStamp(r) {
		var c = r.cloneNode(true), st = c.querySelector("[data-live]");
		if (st) { st.remove(); }
		return c.innerHTML;
	}
	// why says why the region is not redrawn now: "" to redraw.
	function why() {
		if (ended) { return "stopped"; }
		if (off) { return "off"; }
		var r = region(), a = document.activeElement;
		var sel = window.getSelection ? window.getSelection() : null;
		if (document.hidden || isField(a) || (a && a !== document.body && r.contains(a)) ||
			(sel && !sel.isCollapsed && String(sel) !== "") || changed(r)) {
			return "paused";
		}
		if (Date.now() - lastActive > idleMs) { return "idle"; }
		return "";
	}

	// show writes the state and the toggle after the stamp, adding them
	// after each redraw (the stamp comes new with the region).
	function show() {
		var st = stamp();
		var state = st.querySelector("[data-live-state]");
		var toggle = st.querySelector("[data-live-toggle]");
		if (!state) {
			state = document.createElement("span");
			state.setAttribute("data-live-state", "");
			state.setAttribute("data-testid", "live-state");
			st.appendChild(document.createTextNode(" · "));
			st.appendChild(state);
			toggle = document.createElement("button");
			toggle.type = "button";
			toggle.className = "secondary";
			toggle.setAttribute("data-live-toggle", "");
			toggle.setAttribute("data-testid", "live-toggle");
			toggle.addEventListener("click", function () {
				off = !off;
				try { window.localStorage.setItem(storeKey, off ? "off" : "on"); } catch (e) { /* kept for this page only */ }
				toggle.blur();
				show();
				if (!off) { schedule(0); }
			});
			st.appendChild(document.createTextNode(" "));
			st.appendChild(toggle);
		}
		var w = why(), d = st.dataset;
		state.textContent = failed && !w ? d.failed : ({ stopped: d.stopped, off: d.off, paused: d.paused, idle: d.idle }[w] || d.every);
		state.setAttribute("data-state", w || "on");
		toggle.textContent = off ? d.start : d.stop;
		toggle.hidden = ended;
	}

	function schedule(ms) {
		if (timer) { window.clearTimeout(timer); }
		timer = ended ? 0 : window.setTimeout(tick, ms);
	}

	function tick() {
		timer = 0;
		if (why() || busy) {
			show();
			schedule(every());
			return;
		}
		busy = true;
		var url = window.location.href;
		window.fetch(url, { credentials: "same-origin", cache: "no-store", headers: { "Accept": "text/html" } })
			.then(function (res) {
				if (res.redirected) {
					ended = true; // signed out: the answer is another page
					return null;
				}
				if (!res.ok) { throw new Error("status " + res.status); }
				return res.text();
			})
			.then(function (html) {
				failed = false;
				// The viewer may have started typing while it loaded.
				if (html === null || why()) { return; }
				var next = new DOMParser().parseFromString(html, "text/html").querySelector("[data-live]");
				if (!next) { return; }
				var cur = region(), nextRegion = regionOf(next);
				// Nothing changed but the time: only the time is redrawn,
				// and the page's nodes (and what the viewer points at) stay.
				if (withoutStamp(cur) === withoutStamp(nextRegion)) {
					var t = stamp().querySelector("time"), nt = next.querySelector("time");
					if (t && nt) { t.replaceWith(document.importNode(nt, true)); }
					return;
				}
				var open = [];
				cur.querySelectorAll("details").forEach(function (d, i) { if (d.open) { open.push(i); } });
				var fresh = document.importNode(nextRegion, true);
				var details = fresh.querySelectorAll("details");
				open.forEach(function (i) { if (details[i]) { details[i].open = true; } });
				cur.replaceWith(fresh);
			})
			.catch(function () { failed = true; })
			.then(function () {
				busy = false;
				show();
				schedule(every());
			});
	}

	document.addEventListener("visibilitychange", function () {
		if (!document.hidden) { schedule(0); }
	});
	show();
	schedule(every());
})();
