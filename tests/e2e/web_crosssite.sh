# shellcheck shell=bash
# Issue 51, 4, in a real browser (headless Chromium, web_browser.py): a page served from another
# lab host (python's http.server on h3) that knows the drop box's URL posts a form to it with
# fetch(…, {mode: 'no-cors'}), as any site may without asking. The drop box answers 403 (its
# Origin and Sec-Fetch-Site are not the page's own: CrossSite) and nothing lands; the same browser
# uploading from the drop box's own page is still served.

test_web_browser_cross_site_post_refused() {
    web_check_browser || return 1
    mkdir -p "$OUT/save" "$OUT/site" "$OUT/up"
    cp "$ROOT/tests/e2e/pages/crosssite.html" "$OUT/site/"
    printf 'mine\n' >"$OUT/up/mine.txt"
    local site port=8731 page up=0 deadline
    page="http://$(lab_addr 3):$port/crosssite.html"
    lab_bg 3 "$OUT/site.log" python3 -m http.server "$port" --bind "$(lab_addr 3)" --directory "$OUT/site" >/dev/null
    site=$LAB_PID
    trap 'trap - RETURN; kill "$site" 2>/dev/null' RETURN
    deadline=$((SECONDS + 30))
    while ((SECONDS < deadline)); do
        lab_run 2 curl -sf -m 2 -o /dev/null "$page" && { up=1; break; }
        sleep 0.2
    done
    expect_eq "$up" 1 "the other site's page is served from h3" || { cat "$OUT/site.log.err" >&2; return 1; }
    web_start 1 "$OUT/accept.jsonl" -- accept --web --save-dir "$OUT/save" || return 1
    web_browser 2 crosssite "$page" "${WEB_URL}upload" >"$OUT/cross.json" 2>"$OUT/cross.err" || {
        fail "the browser did not load the other site's page"; cat "$OUT/cross.json" "$OUT/cross.err" >&2; return 1; }
    expect_eq "$(jq -c .statuses "$OUT/cross.json")" "[403]" "what the drop box answered the other site's post" || {
        cat "$OUT/cross.json" >&2; return 1; }
    [[ -z $(ls -A "$OUT/save") ]] || { fail "the other site's file landed"; ls -A "$OUT/save" >&2; return 1; }
    web_browser 2 upload "$WEB_URL" "$OUT/up/mine.txt" >"$OUT/own.json" 2>"$OUT/own.err" || {
        fail "the upload from the drop box's own page"; cat "$OUT/own.json" "$OUT/own.err" >&2; return 1; }
    cmp "$OUT/up/mine.txt" "$OUT/save/mine.txt" || { fail "the file from the drop box's own page did not land"; return 1; }
    stop "$WEB_PID"
    expect_eq $? 0 "accept --web ends with Ctrl-C" || return 1
}
