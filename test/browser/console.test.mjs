// Browser test of the /ui tool console, in Debian's headless Chromium driven
// by playwright-core (no browser download).
//
//   node console.test.mjs <baseURL> <apiKey> <screenshotPath>
//
// It opens /ui, is refused with a wrong key, enters the right one, runs
// add-memory from its generated form, then search-memories for the new
// memory, and checks that the result and the agent hints (next actions,
// confidence) are shown. It then checks a phone-sized viewport (375×812)
// has no horizontal scroll. Screenshots: <screenshotPath> (desktop) and the
// same name with "-phone" (phone). It exits non-zero on the first failure.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { chromium } from 'playwright-core';

const [baseURL, apiKey, screenshotPath] = process.argv.slice(2);
if (!baseURL || !apiKey || !screenshotPath) {
  console.error('usage: node console.test.mjs <baseURL> <apiKey> <screenshotPath>');
  process.exit(2);
}
const phonePath = screenshotPath.replace(/(\.png)?$/, '-phone.png');
const origin = new URL(baseURL).origin;
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const TIMEOUT = 15_000;

const userDataDir = mkdtempSync(join(tmpdir(), 'toolsvc-chromium-'));
const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath: CHROMIUM,
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
  viewport: { width: 1360, height: 900 },
  deviceScaleFactor: 1,
  colorScheme: 'light',
  reducedMotion: 'reduce',
});

const problems = []; // console errors, page errors, CSP violations, foreign requests
const requests = [];
let step = 'start';

function log(msg) {
  step = msg;
  process.stdout.write(`• ${msg}\n`);
}

try {
  const page = context.pages()[0] ?? await context.newPage();
  page.setDefaultTimeout(TIMEOUT);
  // Chromium logs every 4xx answer as a console error; the test causes those
  // on purpose (wrong key, invalid input, unknown id) and checks them itself.
  page.on('console', (m) => {
    if (m.type() === 'error' && !/^Failed to load resource: the server responded with a status of 4\d\d/.test(m.text())) problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('request', (r) => {
    requests.push(r);
    if (!r.url().startsWith(origin) && !r.url().startsWith('data:')) problems.push(`external request: ${r.url()}`);
  });

  log('open /ui');
  const resp = await page.goto(`${origin}/ui`);
  assert.equal(resp.status(), 200);
  assert.match(resp.headers()['content-security-policy'] ?? '', /default-src 'self'/);
  await page.getByRole('heading', { name: 'Pick a tool' }).waitFor();

  log('a wrong key is refused with a message');
  await page.getByLabel('API key').fill('not-a-valid-key');
  await page.getByRole('button', { name: 'Use key' }).click();
  await page.getByText('This key was not accepted').waitFor();

  log('enter the key: kept in sessionStorage, never in the URL');
  const keyedFrom = requests.length;
  await page.getByLabel('API key').fill(apiKey);
  await page.getByRole('button', { name: 'Use key' }).click();
  await page.getByText('Key saved for this browser tab.').waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.getItem('toolsvc.console.apiKey')), apiKey);
  const sidebar = page.getByRole('navigation', { name: 'Tools' });
  await sidebar.getByRole('link', { name: /Add memory/ }).waitFor();

  log('tools are grouped by category and filtered by tag and search');
  for (const group of ['Queries', 'Mutations']) await sidebar.getByRole('heading', { name: new RegExp(`^${group}`) }).waitFor();
  await page.getByLabel('Tag').selectOption('search');
  assert.equal(await sidebar.getByRole('link', { name: /Add memory/ }).count(), 0, 'tag filter keeps add-memory');
  await sidebar.getByRole('link', { name: /Search memories/ }).waitFor();
  await page.getByLabel('Tag').selectOption('');
  await page.getByLabel('Search tools').fill('grounded summary');
  await sidebar.getByRole('link', { name: /Summarize memories/ }).waitFor();
  assert.equal(await sidebar.getByRole('link').count(), 1, 'search shows only the matching tool');
  await page.getByLabel('Search tools').fill('');

  log('open add-memory: contract, annotations, schemas, a form empty but for the schema defaults');
  await sidebar.getByRole('link', { name: /Add memory/ }).click();
  const main = page.getByRole('main');
  await main.getByRole('heading', { name: 'Add memory', level: 2 }).waitFor();
  for (const b of ['Writes data', 'Non-destructive', 'Not idempotent']) await main.getByText(b, { exact: true }).first().waitFor();
  await main.getByText('Input schema').waitFor();
  await main.getByText('Output schema').waitFor();
  const content = main.getByLabel(/^Content/);
  assert.equal(await content.inputValue(), '', 'the form starts empty: no example value the user did not choose');
  assert.equal(await main.getByLabel(/^Layer/).inputValue(), 'user', 'the schema default is shown');
  assert.equal(await main.getByLabel(/^Tags/).first().inputValue().catch(() => ''), '', 'no example tags');
  assert.equal(await main.locator('#run-form').getByText(/AddMemoryRequest/).count(), 0, "the form does not show the request message's name");
  await main.getByRole('button', { name: 'Use example', exact: true }).click();
  assert.equal(await content.inputValue(), 'User prefers functional programming patterns over OOP', '"Use example" fills the first example');

  log('a required field left empty is flagged next to the field, without a call');
  const callsBefore = requests.filter((r) => r.url().includes(':call')).length;
  await content.fill('');
  await main.getByRole('button', { name: /^Run add-memory/ }).click();
  await main.getByText('is required').waitFor();
  assert.equal(await content.getAttribute('aria-invalid'), 'true');
  assert.equal(requests.filter((r) => r.url().includes(':call')).length, callsBefore, 'no call with an invalid form');

  log('a server-side field violation is shown with the error and next to its field');
  await content.fill('A memory for a layer this key has no identifier for');
  await main.getByLabel(/^Layer/).selectOption('session');
  await main.getByRole('button', { name: /^Run add-memory/ }).click();
  const result = main.locator('#result');
  await result.getByRole('alert').getByText('INVALID_INPUT', { exact: true }).waitFor();
  await result.getByText('HTTP 400').waitFor();
  await result.getByRole('heading', { name: 'Field violations' }).waitFor();
  const layerError = main.locator('.field.invalid').filter({ has: page.getByLabel(/^Layer/) }).locator('.field-error');
  assert.match(await layerError.textContent(), /session/);
  assert.equal(await main.getByLabel(/^Layer/).getAttribute('aria-invalid'), 'true');
  await main.getByLabel(/^Layer/).selectOption('user');

  log('run add-memory');
  // The server's store is fresh for each run, so a plain sentence is unique.
  const memory = 'The team prefers PostgreSQL for new services';
  const query = 'team prefers PostgreSQL';
  await content.fill(memory);
  await main.getByRole('button', { name: /^Run add-memory/ }).click();
  await result.getByText('Success', { exact: true }).waitFor();
  assert.equal(await main.locator('.field.invalid').count(), 0, 'a successful run clears the field errors');
  await result.getByRole('heading', { name: 'Agent hints' }).waitFor();
  const added = await result.locator('pre.json').first().textContent();
  assert.match(added, /"success": true/);

  log('run search-memories for the new memory');
  await sidebar.getByRole('link', { name: /Search memories/ }).click();
  await main.getByRole('heading', { name: 'Search memories', level: 2 }).waitFor();
  await main.getByLabel(/^Query/).fill(query);
  await main.getByLabel('project', { exact: true }).uncheck();
  await main.getByRole('button', { name: /^Run search-memories/ }).click();
  await result.getByText('Success', { exact: true }).waitFor();
  const data = await result.locator('pre.json').first().textContent();
  assert.ok(data.includes(memory), `search result shows the memory; got ${data.slice(0, 400)}`);

  log('the hints are laid out: next actions with priorities, confidence');
  await result.getByRole('heading', { name: 'Suggested next actions' }).waitFor();
  const actions = result.locator('ol.actions > li');
  assert.ok(await actions.count() >= 1, 'at least one suggested next action');
  assert.match(await actions.first().locator('.badge').first().textContent(), /^(critical|high|medium|low)$/);
  const confidence = result.getByRole('meter', { name: 'Confidence' });
  await confidence.waitFor();
  const value = Number(await confidence.getAttribute('value'));
  assert.ok(value > 0 && value <= 1, `confidence ${value} in (0, 1]`);
  assert.match(await result.locator('.meter-value').first().textContent(), /^\d{1,3}%$/);
  await result.getByRole('heading', { name: 'Metadata' }).waitFor();
  await result.getByText('search-memories', { exact: false }).first().waitFor();

  log('desktop screenshot');
  await page.setViewportSize({ width: 1440, height: 1480 });
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: screenshotPath, fullPage: false });
  await page.setViewportSize({ width: 1360, height: 900 });

  log('a tool error (delete-memory of an unknown id, its example) shows code, status and message');
  await sidebar.getByRole('link', { name: /Delete memory/ }).click();
  await main.getByRole('heading', { name: 'Delete memory', level: 2 }).waitFor();
  await main.getByText('Destructive', { exact: true }).waitFor();
  await main.getByRole('button', { name: 'Use example', exact: true }).click();
  await main.getByRole('button', { name: /^Run delete-memory/ }).click();
  await result.getByRole('alert').getByText('NOT_FOUND', { exact: true }).waitFor();
  await result.getByText('HTTP 404').waitFor();
  await result.locator('.error-message').getByText(/not found/).waitFor();
  await sidebar.getByRole('link', { name: /Search memories/ }).click();
  await main.getByRole('heading', { name: 'Search memories', level: 2 }).waitFor();
  await main.getByLabel(/^Query/).fill(query);
  await main.getByLabel('project', { exact: true }).uncheck();
  await main.getByRole('button', { name: /^Run search-memories/ }).click();
  await result.getByText('Success', { exact: true }).waitFor();

  log('the key never appears in a URL');
  for (const r of requests) assert.ok(!r.url().includes(apiKey), `key in ${r.url()}`);
  assert.ok(!page.url().includes(apiKey));
  const authed = requests.slice(keyedFrom).filter((r) => r.url().includes('/v1/tools'));
  assert.ok(authed.length > 0 && authed.every((r) => r.headers().authorization?.startsWith('Bearer ')), 'every API request sends the key as a bearer token');

  log('phone viewport 375×812: one column, no horizontal scroll');
  await page.setViewportSize({ width: 375, height: 812 });
  await page.waitForTimeout(100);
  const overflow = await page.evaluate(() => {
    const doc = document.documentElement;
    const wide = [...document.querySelectorAll('body *')]
      .filter((el) => el.getBoundingClientRect().right > doc.clientWidth + 1 && !el.closest('pre'))
      .map((el) => `${el.tagName.toLowerCase()}.${el.className}`);
    return { scrollWidth: doc.scrollWidth, clientWidth: doc.clientWidth, wide: wide.slice(0, 5) };
  });
  assert.ok(overflow.scrollWidth <= overflow.clientWidth, `horizontal scroll at 375 px: ${JSON.stringify(overflow)}`);
  assert.deepEqual(overflow.wide, [], 'elements wider than the viewport');
  const side = await page.locator('.sidebar').boundingBox();
  const mainBox = await page.locator('main').boundingBox();
  assert.ok(mainBox.y >= side.y + side.height - 1, 'sidebar stacks above the tool at phone width');
  const browse = page.getByRole('button', { name: /Browse tools/ });
  assert.equal(await browse.getAttribute('aria-expanded'), 'false', 'the list is folded while a tool is open');
  assert.equal(await sidebar.getByRole('link', { name: /Add memory/ }).isVisible(), false);
  await browse.click();
  await sidebar.getByRole('link', { name: /Add memory/ }).waitFor();
  await browse.click();
  await page.locator('#hints-title').evaluate((el) => el.scrollIntoView({ block: 'start' }));
  await page.screenshot({ path: phonePath, fullPage: false });

  log('keyboard: the tool links and the Run button are reachable and focus is visible');
  await page.setViewportSize({ width: 1360, height: 900 });
  await page.getByLabel('Search tools').focus();
  await page.keyboard.press('Tab'); // tag filter
  await page.keyboard.press('Tab'); // first tool link
  const focused = await page.evaluate(() => ({ cls: document.activeElement?.className, outline: getComputedStyle(document.activeElement).outlineStyle }));
  assert.equal(focused.cls, 'tool-link');
  assert.notEqual(focused.outline, 'none', 'focus is visible');

  assert.deepEqual(problems, [], 'no console errors, CSP violations or external requests');
  log(`ok — screenshots ${screenshotPath}, ${phonePath}`);
} catch (e) {
  console.error(`FAIL at step "${step}": ${e.stack ?? e}`);
  if (problems.length) console.error(`problems seen:\n  ${problems.join('\n  ')}`);
  try {
    await context.pages()[0]?.screenshot({ path: screenshotPath.replace(/(\.png)?$/, '-failure.png'), fullPage: true });
  } catch {
    // The page may be gone; the error above is what matters.
  }
  process.exitCode = 1;
} finally {
  await context.close();
  rmSync(userDataDir, { recursive: true, force: true });
}
