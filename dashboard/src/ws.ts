// One WebSocket for the whole page, multiplexing topics. Components subscribe with a callback;
// the socket subscribes a topic while anyone listens, reconnects with backoff when it drops, and
// subscribes every topic again on the new socket (topic sources replay what was missed).
import { useEffect, useRef, useState } from 'preact/hooks';

export type WsState = 'connecting' | 'open' | 'reconnecting' | 'closed';
type Listener = (data: any, ts: string) => void;

const listeners = new Map<string, Set<Listener>>();
const stateListeners = new Set<(s: WsState) => void>();
let socket: WebSocket | null = null;
let state: WsState = 'closed';
let attempts = 0;
let retryTimer: ReturnType<typeof setTimeout> | null = null;
let wanted = false;

function setState(s: WsState): void {
  state = s;
  for (const l of stateListeners) l(s);
}

function send(msg: unknown): void {
  if (socket?.readyState === WebSocket.OPEN) socket.send(JSON.stringify(msg));
}

function connect(): void {
  if (socket || !wanted) return;
  const url = `${location.protocol === 'https:' ? 'wss:' : 'ws:'}//${location.host}/api/ws`;
  const ws = new WebSocket(url);
  socket = ws;
  setState(attempts === 0 ? 'connecting' : 'reconnecting');
  ws.onopen = () => {
    attempts = 0;
    setState('open');
    for (const topic of listeners.keys()) send({ type: 'subscribe', topic });
  };
  ws.onmessage = (ev) => {
    let msg: any;
    try {
      msg = JSON.parse(String(ev.data));
    } catch {
      return;
    }
    if (msg?.type !== 'event' || typeof msg.topic !== 'string') return;
    for (const l of listeners.get(msg.topic) ?? []) l(msg.data, msg.ts);
  };
  ws.onclose = () => {
    if (socket === ws) socket = null;
    if (!wanted) return setState('closed');
    setState('reconnecting');
    // 0.5 s, 1 s, 2 s ... capped at 10 s, so a restarted control plane is found again quickly.
    const delay = Math.min(10_000, 500 * 2 ** attempts++);
    retryTimer = setTimeout(() => {
      retryTimer = null;
      connect();
    }, delay);
  };
}

/** Opens the shared socket (after login); `stop` closes it (logout). */
export function startSocket(): void {
  wanted = true;
  connect();
}

export function stopSocket(): void {
  wanted = false;
  if (retryTimer) clearTimeout(retryTimer);
  retryTimer = null;
  attempts = 0;
  socket?.close();
  socket = null;
  setState('closed');
}

export function subscribe(topic: string, fn: Listener): () => void {
  let set = listeners.get(topic);
  if (!set) {
    set = new Set();
    listeners.set(topic, set);
    send({ type: 'subscribe', topic });
  }
  set.add(fn);
  return () => {
    const s = listeners.get(topic);
    if (!s) return;
    s.delete(fn);
    if (s.size === 0) {
      listeners.delete(topic);
      send({ type: 'unsubscribe', topic });
    }
  };
}

/** Subscribes while mounted; `fn` may change between renders (it always sees current state). */
export function useTopic(topic: string | null, fn: Listener): void {
  const latest = useRef(fn);
  latest.current = fn;
  useEffect(() => (topic ? subscribe(topic, (d, ts) => latest.current(d, ts)) : undefined), [topic]);
}

export function useSocketState(): WsState {
  const [s, set] = useState(state);
  useEffect(() => {
    stateListeners.add(set);
    set(state);
    return () => void stateListeners.delete(set);
  }, []);
  return s;
}

/**
 * The container shell's own socket (a TTY stream, not topics): one per open terminal, binary
 * frames, closed by the terminal. Kept here so every socket the dashboard opens is in this file.
 */
export function openShellSocket(url: string): WebSocket {
  const ws = new WebSocket(url);
  ws.binaryType = 'arraybuffer';
  return ws;
}
