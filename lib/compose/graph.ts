// depends_on as a graph: undefined references, cycles (named in order), and a start order.
import type { Finding, ServiceSpec } from './types.js';

export function checkDependencies(services: Record<string, ServiceSpec>): Finding[] {
  const findings: Finding[] = [];
  for (const svc of Object.values(services)) {
    for (const dep of Object.keys(svc.dependsOn)) {
      if (!(dep in services))
        findings.push({
          level: 'error',
          service: svc.name,
          key: 'depends_on',
          message: `depends on undefined service "${dep}"`,
        });
      else if (dep === svc.name)
        findings.push({
          level: 'error',
          service: svc.name,
          key: 'depends_on',
          message: 'a service cannot depend on itself',
        });
    }
  }
  const cycle = findCycle(services);
  if (cycle)
    findings.push({
      level: 'error',
      service: cycle[0],
      key: 'depends_on',
      message: `dependency cycle: ${cycle.join(' -> ')}`,
    });
  return findings;
}

function findCycle(services: Record<string, ServiceSpec>): string[] | null {
  const state = new Map<string, 'visiting' | 'done'>();
  const stack: string[] = [];
  const visit = (name: string): string[] | null => {
    state.set(name, 'visiting');
    stack.push(name);
    for (const dep of Object.keys(services[name].dependsOn)) {
      if (!(dep in services) || dep === name) continue;
      const s = state.get(dep);
      if (s === 'visiting') return [...stack.slice(stack.indexOf(dep)), dep];
      if (s === undefined) {
        const found = visit(dep);
        if (found) return found;
      }
    }
    stack.pop();
    state.set(name, 'done');
    return null;
  };
  for (const name of Object.keys(services)) {
    if (!state.has(name)) {
      const found = visit(name);
      if (found) return found;
    }
  }
  return null;
}

/** Dependencies first, otherwise file order. Assumes checkDependencies found no error. */
export function startOrder(services: Record<string, ServiceSpec>): string[] {
  const order: string[] = [];
  const seen = new Set<string>();
  const visit = (name: string) => {
    if (seen.has(name)) return;
    seen.add(name);
    for (const dep of Object.keys(services[name].dependsOn)) if (dep in services) visit(dep);
    order.push(name);
  };
  for (const name of Object.keys(services)) visit(name);
  return order;
}
