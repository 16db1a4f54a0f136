/** The console's stylesheet (/console/assets/console.css): the system font stack, nothing from other hosts. */
export const CONSOLE_STYLE = `
:root { color-scheme: light; --fg: #1d232a; --muted: #5b6673; --line: #d9dee4; --bg: #f6f7f9; --ok: #17703a; --bad: #b3261e; --warn: #8a5a00; --link: #0b57d0; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; color: var(--fg); background: var(--bg); }
a { color: var(--link); text-decoration: none; } a:hover { text-decoration: underline; }
header { display: flex; gap: 18px; align-items: center; padding: 10px 20px; background: #1d232a; color: #fff; }
header a { color: #dfe6ee; } header a[aria-current="page"] { color: #fff; font-weight: 600; border-bottom: 2px solid #fff; }
header .brand { font-weight: 700; color: #fff; margin-right: 8px; } header .right { margin-left: auto; display: flex; gap: 14px; }
main { padding: 16px 20px 40px; max-width: 1280px; }
h1 { font-size: 20px; margin: 4px 0 12px; } h2 { font-size: 16px; margin: 22px 0 8px; }
table { border-collapse: collapse; width: 100%; background: #fff; border: 1px solid var(--line); }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: #eef1f4; font-weight: 600; font-size: 13px; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
pre { background: #fff; border: 1px solid var(--line); padding: 10px; overflow: auto; max-height: 420px; white-space: pre-wrap; word-break: break-all; }
form.filters { display: flex; flex-wrap: wrap; gap: 8px; align-items: end; margin-bottom: 12px; background: #fff; border: 1px solid var(--line); padding: 10px; }
form.filters label { display: flex; flex-direction: column; font-size: 12px; color: var(--muted); gap: 2px; }
input, select, button { font: inherit; padding: 4px 8px; border: 1px solid #aab4bf; border-radius: 4px; background: #fff; }
button { cursor: pointer; background: #eef1f4; } button.primary { background: #0b57d0; border-color: #0b57d0; color: #fff; }
button:disabled { opacity: 0.6; cursor: default; }
.presets { display: flex; gap: 8px; align-items: center; margin-bottom: 8px; font-size: 13px; }
.status-handled, .status-ok, .ok { color: var(--ok); } .status-failed, .bad { color: var(--bad); } .status-retrying { color: var(--warn); }
.pill { display: inline-block; padding: 0 6px; border-radius: 8px; font-size: 12px; border: 1px solid currentColor; }
.muted { color: var(--muted); } .notice { padding: 8px 10px; background: #fff8e1; border: 1px solid #f0d48a; margin: 8px 0; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(280px, 1fr)); gap: 12px; }
.card { background: #fff; border: 1px solid var(--line); padding: 10px 12px; } .card h2 { margin-top: 0; }
dl.kv { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 4px 14px; margin: 0; } dl.kv dt { color: var(--muted); }
dl.kv dd { margin: 0; overflow-wrap: anywhere; } time { white-space: nowrap; } td.mono { overflow-wrap: anywhere; }
.cards.wide { grid-template-columns: minmax(0, 3fr) minmax(0, 2fr); }
.bulk { display: flex; gap: 8px; align-items: center; flex-wrap: wrap; } progress { width: 160px; }
details summary { cursor: pointer; color: var(--link); }
.pager { margin-top: 10px; display: flex; gap: 12px; }
header form.search { display: flex; gap: 4px; } header form.search input { width: 16em; }
.level { display: inline-block; padding: 0 6px; border-radius: 8px; font-size: 12px; font-weight: 600; border: 1px solid currentColor; cursor: help; }
.level-ok { color: var(--ok); background: #e8f4ec; } .level-warn { color: var(--warn); background: #fff4d6; } .level-bad { color: var(--bad); background: #fdecea; }
table.figures th { background: none; font-weight: normal; font-size: 14px; overflow-wrap: break-word; } .cards.figure-cards { grid-template-columns: repeat(auto-fill, minmax(360px, 1fr)); } .verdict { font-size: 15px; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(420px, 1fr)); gap: 12px; margin-bottom: 12px; } figure.chart { margin: 0; background: #fff; border: 1px solid var(--line); padding: 10px 12px; min-width: 0; }
figure.chart figcaption { font-weight: 600; margin-bottom: 4px; } figure.chart > svg { width: 100%; height: auto; display: block; } figure.chart path { stroke-width: 2; stroke-linejoin: round; stroke-linecap: round; }
figure.chart text { font-size: 11px; fill: var(--muted); } figure.chart line.axis { stroke: #aab4bf; } figure.chart line.grid { stroke: var(--line); stroke-dasharray: 3 3; }
section.handler { margin-bottom: 14px; } section.handler h3 { font-size: 14px; margin: 12px 0 6px; font-weight: 600; } td.attempt-number { white-space: nowrap; font-variant-numeric: tabular-nums; }
.error-text { overflow-wrap: anywhere; white-space: pre-wrap; }
table.attempts { table-layout: fixed; } table.attempts th:nth-child(1) { width: 5.5em; } table.attempts th:nth-child(2), table.attempts th:nth-child(6) { width: 20em; } table.attempts time { white-space: normal; } table.attempts time .muted { white-space: nowrap; } table.attempts th:nth-child(3) { width: 6.5em; } table.attempts th:nth-child(4) { width: 5.5em; }
ul.legend { list-style: none; padding: 0; margin: 6px 0 0; display: flex; flex-wrap: wrap; gap: 4px 14px; font-size: 12.5px; } svg.swatch { width: 10px; height: 10px; margin-right: 4px; }
`;
