// The web UI in headless Chromium, as a surveillance officer uses it: sign in, open the
// dispute queue, open a disputed round from demo data, step through it like a video
// review, see the highlighted difference, open a case with a note, download the evidence
// bundle and check it with `roundledger verify-bundle`. Screenshots go to
// target/browser-test/ as artifacts. Run by scripts/browser-test.sh (from scripts/test.sh).
//
// Environment: ROUNDLEDGER_BIN (the built binary), CHROMIUM (default /usr/bin/chromium).
"use strict";

const { chromium } = require("playwright-core");
const { spawn, execFileSync } = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");
const assert = require("assert");

const ROOT = path.resolve(__dirname, "..", "..");
const BIN = process.env.ROUNDLEDGER_BIN || path.join(ROOT, "target", "debug", "roundledger");
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const SHOTS = path.join(ROOT, "target", "browser-test");
const TIMEOUT_MS = 120000;

function log(...a) { console.log("[browser-test]", ...a); }

function startServer(ledger, config) {
  return new Promise((resolve, reject) => {
    const p = spawn(BIN, ["serve", "--ledger", ledger, "--no-ingest", "--config", config, "--http", "127.0.0.1:0"],
      { stdio: ["ignore", "inherit", "pipe"] });
    let err = "";
    const timer = setTimeout(() => reject(new Error("server did not start: " + err)), 60000);
    p.stderr.on("data", d => {
      err += d.toString();
      process.stderr.write(d);
      const m = err.match(/web UI on (http:\/\/[0-9.:]+)\//);
      if (m) { clearTimeout(timer); resolve({ proc: p, url: m[1] }); }
    });
    p.on("exit", code => { clearTimeout(timer); reject(new Error(`server exited with ${code}: ${err}`)); });
  });
}

async function waitIndexed(url, token) {
  const deadline = Date.now() + 60000;
  for (;;) {
    const r = await fetch(url + "/v1/status", { headers: { Authorization: "Bearer " + token } });
    const s = await r.json();
    if (s.events_indexed === s.events_stored && s.events_stored > 0) return s;
    if (Date.now() > deadline) throw new Error("index did not catch up: " + JSON.stringify(s));
    await new Promise(r => setTimeout(r, 200));
  }
}

async function main() {
  assert.ok(fs.existsSync(BIN), `no roundledger binary at ${BIN}`);
  assert.ok(fs.existsSync(CHROMIUM), `no chromium at ${CHROMIUM}`);
  fs.mkdirSync(SHOTS, { recursive: true });
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "roundledger-browser-"));
  const ledger = path.join(tmp, "ledger");
  const config = path.join(tmp, "tokens.json");
  log("demo data:", execFileSync(BIN, ["seed", "--ledger", ledger, "--tables", "5", "--rounds", "40",
    "--payout-errors", "0.08", "--irregularities", "0.01", "--seed", "2026", "--close"]).toString().trim());
  execFileSync(BIN, ["tokens", "--out", config]);
  const token = JSON.parse(fs.readFileSync(config)).tokens.find(t => t.role === "surveillance").token;

  const server = await startServer(ledger, config);
  let browser;
  try {
    const status = await waitIndexed(server.url, token);
    log("server", server.url, "indexed", status.events_indexed, "events,", status.rounds_indexed, "rounds");
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    });
    const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1440, height: 1000 } });
    const page = await context.newPage();
    page.setDefaultTimeout(TIMEOUT_MS);
    const errors = [];
    page.on("pageerror", e => errors.push(e.message));
    page.on("console", m => { if (m.type() === "error") errors.push(m.text()); });

    // Sign in.
    await page.goto(server.url + "/");
    await page.waitForSelector("#login:not([hidden])");
    await page.screenshot({ path: path.join(SHOTS, "01-sign-in.png") });
    await page.fill("#token", "wrong-token-0000000000000000");
    await page.click("#login-form button");
    await page.waitForFunction(() => document.querySelector("#login-error").textContent.length > 0);
    await page.fill("#token", token);
    await page.click("#login-form button");

    // The dispute queue.
    await page.waitForSelector("#rounds-table tbody tr");
    const queued = await page.locator("#rounds-table tbody tr").count();
    assert.ok(queued > 0, "the dispute queue lists disputed rounds");
    assert.match(await page.locator("#who").innerText(), /surveillance/);
    await page.screenshot({ path: path.join(SHOTS, "02-dispute-queue.png"), fullPage: true });

    // Open the first disputed round.
    await page.locator("#rounds-table tbody tr").first().click();
    await page.waitForSelector("#felt .box");
    await page.waitForSelector("#step-pos");
    const pos0 = await page.locator("#step-pos").innerText();
    assert.match(pos0, /^event 1 of \d+$/);
    const n = Number(pos0.match(/of (\d+)/)[1]);
    assert.ok(n > 10, "a round has many events");
    await page.screenshot({ path: path.join(SHOTS, "03-round-first-event.png"), fullPage: true });

    // Step forward like a video review until cards are on the layout, then back once.
    let cards = 0, k = 1;
    while (cards === 0 && k < n) {
      await page.click("#step-fwd");
      k += 1;
      cards = await page.locator("#felt .box .pcard").count();
    }
    assert.ok(cards > 0, "stepping forward deals cards onto the boxes");
    assert.equal(await page.locator("#step-pos").innerText(), `event ${k} of ${n}`);
    for (let i = 0; i < 12 && k < n; i++) { await page.click("#step-fwd"); k += 1; }
    await page.screenshot({ path: path.join(SHOTS, "04-round-mid-deal.png"), fullPage: true });
    await page.click("#step-back");
    assert.equal(await page.locator("#step-pos").innerText(), `event ${k - 1} of ${n}`);
    assert.equal(await page.locator("#timeline li.now").count(), 1);
    // Keyboard: End jumps to the last event (payouts recorded).
    await page.locator("body").press("End");
    assert.equal(await page.locator("#step-pos").innerText(), `event ${n} of ${n}`);
    assert.ok(await page.locator("#step-fwd").isDisabled());

    // The highlighted difference.
    const diffRows = page.locator("#settlement tr.diff");
    assert.ok(await diffRows.count() > 0, "the settlement highlights the disputed line");
    const diffText = await diffRows.first().innerText();
    assert.match(diffText, /overpaid|underpaid/);
    const bg = await diffRows.first().locator("td").first().evaluate(el => getComputedStyle(el).backgroundColor);
    assert.notEqual(bg, "rgba(0, 0, 0, 0)", "the difference row is coloured");
    assert.ok(await page.locator("#felt .box.disputed").count() > 0, "the disputed box is marked on the layout");
    await page.screenshot({ path: path.join(SHOTS, "05-round-last-event-difference.png"), fullPage: true });

    // A case with a note.
    await page.fill("#case-title", "Patron disputes the payout");
    await page.click("#open-case button");
    await page.waitForSelector(".case .note-form textarea");
    await page.fill(".case .note-form textarea", "Reviewed the video: the dealer paid the wrong amount.");
    await page.click(".case .note-form button[type=submit]");
    await page.waitForFunction(() => document.querySelectorAll(".case .entry").length >= 2);

    // Download the evidence bundle and verify it offline.
    const [download] = await Promise.all([page.waitForEvent("download"), page.click("#evidence-btn")]);
    const bundle = path.join(SHOTS, "evidence-bundle.json");
    await download.saveAs(bundle);
    await page.screenshot({ path: path.join(SHOTS, "06-cases-and-evidence.png"), fullPage: true });
    const out = execFileSync(BIN, ["verify-bundle", bundle]).toString();
    log(out.trim());
    assert.match(out, /^OK /);
    assert.match(out, /1 case entries|2 case entries/);

    // Search by table and box finds the round.
    await page.goto(server.url + "/#/search");
    await page.waitForSelector("#search-form");
    await page.selectOption("#s-table", { index: 1 });
    await page.fill("#s-box", "1");
    await page.click("#search-form button");
    await page.waitForSelector("#results table, #results .empty");
    await page.screenshot({ path: path.join(SHOTS, "07-round-search.png"), fullPage: true });

    const real = errors.filter(e => !/status of 401/.test(e));
    assert.deepEqual(real, [], "no JavaScript errors: " + errors.join(" | "));
    log("passed; screenshots in", SHOTS);
  } finally {
    if (browser) await browser.close();
    server.proc.kill("SIGTERM");
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

main().catch(e => { console.error("[browser-test] FAILED:", e); process.exit(1); });
