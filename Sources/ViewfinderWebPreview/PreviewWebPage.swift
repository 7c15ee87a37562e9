/// The preview page: an HTML document and its script, served by ``PreviewWebServer``.
///
/// The script opens `/ws` on the page's own origin with the page's token, draws the newest
/// frame on a canvas (`createImageBitmap` on the JPEG; a frame that arrives while one is being
/// decoded replaces the one waiting, so there is never a backlog), shows the live figures the
/// server sends, and sends a click on the picture as a point in the picture's pixel space. With
/// `?measure=1` it also reports, for every frame it paints, the frame's sequence number and
/// `performance.timeOrigin + performance.now()` in the animation frame after drawing, and keeps
/// the last 4,096 frames' stages in `window.viewfinderPreview.timeline`: `[sequence, published
/// (the server's clock), received, decoded, drawn, painted]`, all in milliseconds since the epoch
/// (for the latency benchmark's breakdown).
///
/// `window.viewfinderPreview` holds the page's state (frames received, drawn, replaced, the last
/// drawn sequence number, the figures) for tools and tests.
import ViewfinderCore

package enum PreviewWebPage {
    /// The HTML document; `token` (URL-safe characters only) is put in the script's URL.
    package static func html(token: String) -> String {
        """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Viewfinder preview</title>
        <link rel="icon" href="data:,">
        <style>
        body { margin: 0; background: #16181c; color: #d8dade; font: 14px/1.4 system-ui, sans-serif; }
        main { display: flex; flex-wrap: wrap; align-items: flex-start; gap: 16px; padding: 16px; }
        #picture { display: block; max-width: 100%; height: auto; background: #000; cursor: crosshair; }
        h1 { font-size: 16px; margin: 0 0 8px; }
        #status { margin: 0 0 8px; color: #9aa0a8; }
        table { border-collapse: collapse; }
        td { padding: 1px 10px 1px 0; }
        td.value { text-align: right; font-variant-numeric: tabular-nums; }
        </style>
        </head>
        <body>
        <main>
        <canvas id="picture" width="640" height="480"></canvas>
        <section>
        <h1>Viewfinder</h1>
        <p id="status">connecting</p>
        <table id="figures"><tbody></tbody></table>
        </section>
        </main>
        <script src="viewer.js?token=\(token)"></script>
        </body>
        </html>

        """
    }

    /// The page's script.
    package static let script = #"""
        'use strict';
        (() => {
          const parameters = new URLSearchParams(location.search);
          const token = parameters.get('token') || '';
          const measure = parameters.get('measure') === '1';
          const canvas = document.getElementById('picture');
          const context = canvas.getContext('2d', { alpha: false });
          const statusLine = document.getElementById('status');
          const table = document.getElementById('figures').tBodies[0];
          const state = {
            connected: false, received: 0, drawn: 0, replaced: 0, failed: 0,
            lastSequence: -1, lastPresentationTime: NaN, width: 0, height: 0,
            publishToPaint: NaN, fps: 0, figures: {}, clicks: 0, paintReports: 0, timeline: [],
          };
          const clock = () => performance.timeOrigin + performance.now();
          window.viewfinderPreview = state;
          let socket = null;
          let waiting = null;
          let waitingReceived = NaN;
          let decoding = false;
          const drawTimes = [];

          function connect() {
            socket = new WebSocket(`ws://${location.host}/ws?token=${encodeURIComponent(token)}`);
            socket.binaryType = 'arraybuffer';
            socket.onopen = () => { state.connected = true; statusLine.textContent = 'live'; };
            socket.onclose = () => {
              state.connected = false;
              statusLine.textContent = 'disconnected, retrying';
              setTimeout(connect, 1000);
            };
            socket.onmessage = (event) => {
              if (typeof event.data === 'string') { receiveText(event.data); return; }
              state.received += 1;
              // Taken off the socket: the server keeps at most two frames in flight to a page that acknowledges.
              socket.send('{"type":"ack"}');
              if (waiting !== null) state.replaced += 1;
              waiting = event.data;
              if (measure) waitingReceived = clock();
              if (!decoding) decodeNewest();
            };
          }

          async function decodeNewest() {
            decoding = true;
            while (waiting !== null) {
              const message = waiting;
              const received = waitingReceived;
              waiting = null;
              const view = new DataView(message);
              if (message.byteLength < 40 || view.getUint32(0, true) !== 0x31504656) { state.failed += 1; continue; }
              const headerSize = view.getUint32(4, true);
              const frame = {
                sequence: Number(view.getBigUint64(8, true)),
                presentationTime: view.getFloat64(16, true),
                published: view.getFloat64(24, true),
                width: view.getUint32(32, true),
                height: view.getUint32(36, true),
                received,
              };
              let bitmap;
              try {
                bitmap = await createImageBitmap(new Blob([new Uint8Array(message, headerSize)], { type: 'image/jpeg' }));
              } catch (error) {
                state.failed += 1;
                continue;
              }
              if (waiting !== null) { state.replaced += 1; bitmap.close(); continue; }
              if (measure) frame.decoded = clock();
              draw(bitmap, frame);
            }
            decoding = false;
          }

          function draw(bitmap, frame) {
            if (canvas.width !== bitmap.width || canvas.height !== bitmap.height) {
              canvas.width = bitmap.width;
              canvas.height = bitmap.height;
            }
            context.drawImage(bitmap, 0, 0);
            bitmap.close();
            state.drawn += 1;
            state.lastSequence = frame.sequence;
            state.lastPresentationTime = frame.presentationTime;
            state.width = canvas.width;
            state.height = canvas.height;
            const drawn = measure ? clock() : NaN;
            requestAnimationFrame(() => {
              const painted = clock();
              if (Number.isFinite(frame.published)) state.publishToPaint = painted - frame.published;
              drawTimes.push(painted);
              while (drawTimes.length > 0 && painted - drawTimes[0] > 1000) drawTimes.shift();
              state.fps = drawTimes.length;
              if (measure && socket && socket.readyState === WebSocket.OPEN) {
                socket.send(JSON.stringify({ type: 'paint', sequence: frame.sequence, time: painted }));
                state.paintReports += 1;
                if (state.timeline.length >= 4096) state.timeline.shift();
                state.timeline.push([frame.sequence, frame.published, frame.received, frame.decoded, drawn, painted]);
              }
            });
          }

          function receiveText(text) {
            let message;
            try { message = JSON.parse(text); } catch (error) { return; }
            if (message.type === 'figures' && message.figures) {
              state.figures = message.figures;
              showFigures();
            }
          }

          function format(value) {
            if (typeof value !== 'number' || !Number.isFinite(value)) return '–';
            return Number.isInteger(value) ? String(value) : value.toFixed(Math.abs(value) < 10 ? 2 : 1);
          }

          function showFigures() {
            const rows = Object.keys(state.figures).sort().map((name) => [name, state.figures[name]]);
            rows.push(['page fps', state.fps], ['page frames replaced', state.replaced],
                      ['page publish to paint ms', state.publishToPaint]);
            while (table.rows.length > rows.length) table.deleteRow(-1);
            rows.forEach(([name, value], index) => {
              const row = table.rows[index] || table.insertRow();
              if (row.cells.length === 0) { row.insertCell(); row.insertCell().className = 'value'; }
              row.cells[0].textContent = name;
              row.cells[1].textContent = format(value);
            });
          }

          canvas.addEventListener('click', (event) => {
            const box = canvas.getBoundingClientRect();
            if (box.width <= 0 || box.height <= 0) return;
            const x = (event.clientX - box.left) * canvas.width / box.width;
            const y = (event.clientY - box.top) * canvas.height / box.height;
            if (socket && socket.readyState === WebSocket.OPEN) {
              socket.send(JSON.stringify({ type: 'click', x, y }));
              state.clicks += 1;
            }
          });

          setInterval(showFigures, 500);
          connect();
        })();

        """#
}
