// The shell's terminal, in its own chunk: @xterm/xterm and its stylesheet load only when the
// shell tab connects. The socket carries the TTY as binary frames; resizes go as a text frame.
import { useEffect, useRef, useState } from 'preact/hooks';
import { Terminal } from '@xterm/xterm';
import '@xterm/xterm/css/xterm.css';
import { openShellSocket } from '../../ws';

// The page's CSP (`style-src 'self'`) blocks the <style> elements xterm writes into its own
// subtree (theme colours, cell sizes). Their text is mirrored into a constructed stylesheet: the
// CSSOM is not inline markup, so the policy stays strict and the terminal keeps its colours.
function mirrorStyles(root: HTMLElement): () => void {
  const sheet = new CSSStyleSheet();
  document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
  let last = '';
  const sync = () => {
    const text = [...root.querySelectorAll('style')].map((st) => st.textContent ?? '').join('\n');
    if (text === last) return;
    last = text;
    sheet.replaceSync(text);
  };
  const mo = new MutationObserver(sync);
  mo.observe(root, { subtree: true, childList: true, characterData: true });
  sync();
  return () => {
    mo.disconnect();
    document.adoptedStyleSheets = document.adoptedStyleSheets.filter((x) => x !== sheet);
  };
}

export function TerminalView({ url, onClosed }: { url: string; onClosed: (opened: boolean) => void }) {
  const box = useRef<HTMLDivElement>(null);
  const [state, setState] = useState<'connecting' | 'open' | 'closed'>('connecting');
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const term = new Terminal({
      convertEol: false,
      cursorBlink: true,
      fontSize: 13,
      rows: 24,
      cols: 100,
      screenReaderMode: true,
    });
    const unmirror = mirrorStyles(el);
    term.open(el);
    const ws = openShellSocket(url);
    let opened = false;
    const enc = new TextEncoder();
    const sendSize = () =>
      ws.readyState === WebSocket.OPEN &&
      ws.send(JSON.stringify({ type: 'resize', rows: term.rows, cols: term.cols }));
    ws.onopen = () => {
      opened = true;
      setState('open');
      sendSize();
      term.focus();
    };
    // Container output is written to the terminal emulator, which draws it; it is never HTML.
    ws.onmessage = (ev) =>
      term.write(typeof ev.data === 'string' ? ev.data : new Uint8Array(ev.data as ArrayBuffer));
    ws.onclose = () => {
      setState('closed');
      onClosed(opened);
    };
    const input = term.onData((d) => ws.readyState === WebSocket.OPEN && ws.send(enc.encode(d)));
    const resize = term.onResize(sendSize);
    return () => {
      input.dispose();
      resize.dispose();
      ws.onclose = null;
      ws.close();
      term.dispose();
      unmirror();
    };
  }, [url]);
  return (
    <div>
      <p class="muted small" role="status">
        {state === 'open' ? 'Connected' : state === 'connecting' ? 'Connecting…' : 'Closed'}
      </p>
      <div ref={box} class="terminal" data-testid="terminal" />
    </div>
  );
}
