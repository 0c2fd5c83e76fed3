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
