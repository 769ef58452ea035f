// A build log that follows the live stream (topic build:<id>, replayed from the start on every
// subscribe), can be paused, and renders only the rows in view so 100,000 lines stay cheap. A
// generated build's plan (lines on the `plan` stream) gets a "Build plan" heading row of its own.
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import type { ComponentChildren } from 'preact';
import type { LogLine } from './api';
import { useTopic } from './ws';

const ROW = 18;
const HEIGHT = 420;
const MIN_HEIGHT = 120;
const OVERSCAN = 20;
const PLAN_HEAD = { head: 'Build plan' } as const;
type Row = LogLine | typeof PLAN_HEAD;

/**
 * `filter` shows only the lines it accepts (runtime logs: a service, a search); `prefix` renders
 * something before each line's text (the service name, the time); `format` rewrites a line's text.
 * All see lines as data, never markup.
 */
export function LogView({
  topic,
  label,
  filter,
  prefix,
  format,
}: {
  topic: string;
  label: string;
  filter?: (l: LogLine) => boolean;
  prefix?: (l: LogLine) => ComponentChildren;
  /** The text shown for a line (default: the line as it came). */
  format?: (l: LogLine) => string;
}) {
  const lines = useRef<LogLine[]>([]);
  const lastSeq = useRef(0);
  const lastAt = useRef('');
  // Only a log with a plan pays for the pass that places its heading.
  const hasPlan = useRef(false);
  const [version, setVersion] = useState(0);
  const [follow, setFollow] = useState(true);
  const [scrollTop, setScrollTop] = useState(0);
  const box = useRef<HTMLDivElement>(null);
  const frame = useRef<number | null>(null);
  // Where following last put the view: only a scroll above it (the reader's) pauses.
  const pinned = useRef(0);

  useEffect(() => {
    lines.current = [];
    lastSeq.current = 0;
    lastAt.current = '';
    hasPlan.current = false;
    setVersion((v) => v + 1);
  }, [topic]);

  useTopic(topic, (d: any) => {
    const batch: LogLine[] = Array.isArray(d?.items) ? d.items : [d];
    for (const l of batch) {
      if (typeof l?.seq !== 'number') continue;
      // A replay repeats lines already shown (same seq, same time): dropped. A runtime-log source
      // that restarted (the socket reconnected) numbers from 1 again, but with later times: kept.
      if (l.seq <= lastSeq.current && !(typeof l.at === 'string' && l.at > lastAt.current)) continue;
      lastSeq.current = l.seq;
      if (typeof l.at === 'string' && l.at > lastAt.current) lastAt.current = l.at;
      if (l.stream === 'plan') hasPlan.current = true;
      lines.current.push(l);
    }
    // One render per frame however many lines arrive.
    frame.current ??= requestAnimationFrame(() => {
      frame.current = null;
      setVersion((v) => v + 1);
    });
  });

  useLayoutEffect(() => {
    const el = box.current;
    if (!follow || !el) return;
    el.scrollTop = el.scrollHeight;
    pinned.current = el.scrollTop;
  }, [version, follow]);

  const shown = filter ? lines.current.filter(filter) : lines.current;
  const all: Row[] = hasPlan.current ? withPlanHeads(shown) : shown;
  const first = Math.max(0, Math.floor(scrollTop / ROW) - OVERSCAN);
  const last = Math.min(all.length, Math.ceil((scrollTop + HEIGHT) / ROW) + OVERSCAN);
  return (
    <div class="logview">
      <div class="row">
        <button type="button" aria-pressed={!follow} onClick={() => setFollow(!follow)}>
          {follow ? 'Pause' : 'Follow'}
        </button>
        <span class="muted" role="status">
          {shown.length !== lines.current.length ? `${shown.length} of ` : ''}
          {lines.current.length} line{lines.current.length === 1 ? '' : 's'}
        </span>
      </div>
      <div
        ref={box}
        class="log"
        role="log"
        aria-label={label}
        tabIndex={0}
        // As tall as its lines, up to HEIGHT: a short log leaves no empty box.
        style={{ height: `${Math.max(MIN_HEIGHT, Math.min(HEIGHT, all.length * ROW + 8))}px` }}
        onScroll={(e) => {
          const el = e.currentTarget as HTMLDivElement;
          setScrollTop(el.scrollTop);
          // Scrolling up pauses; back at the bottom follows again.
          const atBottom = el.scrollHeight - el.scrollTop - el.clientHeight < ROW * 2;
          if (atBottom && !follow) setFollow(true);
          else if (!atBottom && follow && el.scrollTop < pinned.current - ROW) setFollow(false);
        }}
      >
        <div style={{ height: `${all.length * ROW}px`, position: 'relative' }}>
          {all.slice(first, last).map((l, i) =>
            'head' in l ? (
              <div
                key={first + i}
                class="logline log-plan-head"
                role="heading"
                aria-level={4}
                style={{ top: `${(first + i) * ROW}px` }}
              >
                {l.head}
              </div>
            ) : (
              <div
                key={first + i}
                class={`logline log-${l.stream}`}
                style={{ top: `${(first + i) * ROW}px` }}
                data-testid="log-line"
              >
                {prefix?.(l)}
                {format ? format(l) : l.line}
              </div>
            ),
          )}
        </div>
      </div>
    </div>
  );
}

/** The lines with a heading row before each run of `plan` lines. */
function withPlanHeads(lines: LogLine[]): Row[] {
  const out: Row[] = [];
  let prev = '';
  for (const l of lines) {
    if (l.stream === 'plan' && prev !== 'plan') out.push(PLAN_HEAD);
    out.push(l);
    prev = l.stream;
  }
  return out;
}
