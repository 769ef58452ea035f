// Each page names its tab: "<page> · svc" (an app's page: its name), so tabs and history read.
import { useEffect } from 'preact/hooks';

export function useTitle(title: string | null | undefined): void {
  useEffect(() => {
    document.title = title ? `${title} · svc` : 'svc';
  }, [title]);
}
