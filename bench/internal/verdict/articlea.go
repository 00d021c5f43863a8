package verdict

// ArticleA are article A's verdicts, asserted in TestArticleA/claims/<id>.
// Thresholds and their margins come from the measured distributions in
// reports/measurements.md.
var ArticleA = []Verdict{
	// The article's table.
	{ID: "direct-2dl-stalls", Kind: Article, Unit: "ms", Check: Above("direct-2dl", P95, 1000),
		Text: "two slow downloads stall /fast behind both sync workers (article: 5,945 ms)"},
	{ID: "direct-1dl-idle", Kind: Article, Unit: "ms", Check: Below("direct-1dl", P95, 10),
		Text: "one download leaves the other sync worker free (article: 1.72 ms)"},
	{ID: "nginx-off-1dl-idle", Kind: Article, Unit: "ms", Check: Below("nginx-off-1dl", P95, 10),
		Text: "one download behind NGINX buffering off leaves /fast fast (article: 2.33 ms)"},
	{ID: "nginx-on-1dl-idle", Kind: Article, Unit: "ms", Check: Below("nginx-on-1dl", P95, 10),
		Text: "one download behind NGINX buffering on leaves /fast fast (article: 2.94 ms)"},
	{ID: "nginx-on-2dl-idle", Kind: Article, Unit: "ms", Check: Below("nginx-on-2dl", P95, 10),
		Text: "NGINX buffering on keeps /fast fast under two downloads (article: 2.34 ms)"},
	{ID: "gthread-2dl-idle", Kind: Article, Unit: "ms", Check: Below("gthread-2dl", P95, 10),
		Text: "gthread 1x4 keeps /fast fast under two downloads, without NGINX (article: 1.55 ms)"},
	{ID: "direct-0dl-idle", Kind: Article, Unit: "ms", Check: Below("direct-0dl", P95, 10),
		Text: "idle /fast, direct (article: 1.57 ms)"},
	{ID: "nginx-off-0dl-idle", Kind: Article, Unit: "ms", Check: Below("nginx-off-0dl", P95, 10),
		Text: "idle /fast, NGINX buffering off (article: 2.66 ms)"},
	{ID: "nginx-on-0dl-idle", Kind: Article, Unit: "ms", Check: Below("nginx-on-0dl", P95, 10),
		Text: "idle /fast, NGINX buffering on (article: 1.93 ms)"},
	{ID: "nginx-off-2dl-not-idle", Kind: Article, Unit: "ms", Check: Above("nginx-off-2dl", P95, 100),
		Text: "NGINX buffering off does not bring /fast back to idle (article: 1,071 ms)"},
	{ID: "nginx-off-2dl-below-direct", Kind: Article, Unit: "ms", Check: Less("nginx-off-2dl", "direct-2dl", P95),
		Text: "NGINX buffering off stalls /fast less than direct"},
	{ID: "write-nginx-off-below-direct", Kind: Article, Unit: "s", Check: Less("nginx-off-2dl", "direct-2dl", WriteS),
		Text: "the app's write ends sooner behind NGINX buffering off than direct"},
	{ID: "write-nginx-on-below-off", Kind: Article, Unit: "s", Check: Less("nginx-on-2dl", "nginx-off-2dl", WriteS),
		Text: "the app's write ends sooner behind NGINX buffering on than off"},
	// The pilot's other cells and its mechanism: the article gives only
	// the buffering-off figure.
	{ID: "pilot-direct-stalls", Kind: Lab, Unit: "ms", Check: Above("pilot-direct", P95, 1000),
		Text: "the pilot (8 MiB at 1 MiB/s) stalls /fast directly: one sync worker per download waits for its client"},
	{ID: "pilot-nginx-on-idle", Kind: Lab, Unit: "ms", Check: Below("pilot-nginx-on", P95, 10),
		Text: "NGINX buffering on keeps /fast fast in the pilot"},
	{ID: "pilot-nginx-off-write-held", Kind: Lab, Unit: "s", Check: Above("pilot-nginx-off", WriteS, 0.25),
		Text: "under stock TCP memory the pilot's 8 MiB does not fit in the buffering-off path, so its workers wait for the clients (the article's ~2 ms pilot needs a larger path: see @article-host)"},
	{ID: "write-nginx-on-short", Kind: Article, Unit: "s", Check: Below("nginx-on-2dl", WriteS, 0.5),
		Text: "NGINX buffering on takes the 16 MiB from the app at once (article: 0.055 s)"},

	// What the article inferred, observed by the /proc sampler.
	{ID: "tempfile-nginx-on-2dl", Kind: Article, Unit: "MiB", Check: Between("nginx-on-2dl", TempPeak, 8, 32),
		Text: "with buffering on, NGINX holds the responses in temp files (article: 25.2 MiB peak)"},
	{ID: "tempfile-nginx-off-0dl", Kind: Article, Unit: "MiB", Check: Zero("nginx-off-0dl", TempPeakMax),
		Text: "with buffering off, NGINX writes no temp file"},
	{ID: "tempfile-nginx-off-1dl", Kind: Article, Unit: "MiB", Check: Zero("nginx-off-1dl", TempPeakMax),
		Text: "with buffering off, NGINX writes no temp file"},
	{ID: "tempfile-nginx-off-2dl", Kind: Article, Unit: "MiB", Check: Zero("nginx-off-2dl", TempPeakMax),
		Text: "with buffering off, NGINX writes no temp file"},
	{ID: "workers-blocked-direct-2dl", Kind: Article, Unit: "share", Check: Above("direct-2dl", LeastBlocked, 0.5),
		Text: "both sync workers spend most of the window blocked in a socket send (least blocked worker)"},
	{ID: "workers-free-nginx-on-2dl", Kind: Article, Unit: "share", Check: Below("nginx-on-2dl", MostBlocked, 0.05),
		Text: "behind NGINX buffering on, no sync worker waits in a send (most blocked worker)"},
	{ID: "app-cpu-direct-2dl", Kind: Article, Unit: "% of a core", Check: Below("direct-2dl", AppCPU, 5),
		Text: "the stalled app is not short of CPU (article: at most 0.8 % of a core)"},
	{ID: "sendq-busy-direct-2dl", Kind: Article, Unit: "share", Check: Above("direct-2dl", SendQBusy, 0.5),
		Text: "the app's send queues to the clients hold data for most of the downloads"},

	// The harness's own instruments.
	{ID: "completion-direct-8s", Kind: Harness, Unit: "s", Check: Between("direct-2dl", CompletionS, 7.5, 8.5),
		Text: "the paced client reads 16 MiB at 2 MiB/s in about 8 s, direct (its pacing sets the floor)"},
	{ID: "completion-nginx-off-8s", Kind: Harness, Unit: "s", Check: Between("nginx-off-2dl", CompletionS, 7.5, 8.5),
		Text: "the paced client reads 16 MiB at 2 MiB/s in about 8 s, NGINX buffering off"},
	{ID: "completion-nginx-on-8s", Kind: Harness, Unit: "s", Check: Between("nginx-on-2dl", CompletionS, 7.5, 8.5),
		Text: "the paced client reads 16 MiB at 2 MiB/s in about 8 s, NGINX buffering on"},
	{ID: "write-ends-when-rest-fits-direct-2dl", Kind: Harness, Unit: "ratio", Check: Below("direct-2dl", WriteEndMismatch, 0.02),
		Text: "at the app's write end, the bytes the client has not read (counted by the client) are the bytes in the sockets' queues (queued bytes' distance from the client's unread bytes over the socket read, / unread)"},
}
