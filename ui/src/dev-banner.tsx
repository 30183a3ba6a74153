import { useEffect, useState } from 'preact/hooks';
import { apiOptional } from './api';

interface ModuleStatus {
  flag: string;
  path: string;
  error: string | null;
  at: string;
  serving: string[];
}

/** How often `runledger dev`'s module status is read: a save shows here within this. */
const EVERY_MS = 2_000;

/**
 * Under `runledger dev`: a banner while a module's last load failed (the previous version keeps
 * serving). Any other server has no modules (an older one answers 404), and the banner stops asking.
 */
export function DevBanner() {
  const [failed, setFailed] = useState<ModuleStatus[]>([]);
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const read = async () => {
      const status = await apiOptional<{ modules: ModuleStatus[] }>('/dev/status').catch(() => undefined);
      if (status === null || status?.modules.length === 0) return;
      if (status) setFailed(status.modules.filter((m) => m.error !== null));
      timer = setTimeout(read, EVERY_MS);
    };
    void read();
    return () => clearTimeout(timer);
  }, []);
  if (failed.length === 0) return null;
  return (
    <div class="error" role="alert">
      {failed.map((m) => (
        <p key={m.flag}>
          <strong>
            {m.flag} {m.path} did not load
          </strong>{' '}
          ({new Date(m.at).toLocaleTimeString()}): <code>{m.error}</code>. The previous version keeps serving
          {m.serving.length > 0 ? ` (${m.serving.join(', ')})` : ''}: fix the file and save it again.
        </p>
      ))}
    </div>
  );
}
