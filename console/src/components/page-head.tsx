import { useIsFetching, useQueryClient } from '@tanstack/react-query';
import { analyticsKey } from '../pages/analytics-queries';
import { useScope } from '../session';

/**
 * An analytics page's title with a Refresh control: refetches now every analytics query the page
 * shows (the page also refetches on its own once its answers are older than the rollup interval).
 */
export function AnalyticsHead({ title }: { title: string }) {
  const qc = useQueryClient();
  const key = analyticsKey(useScope());
  const busy = useIsFetching({ queryKey: key }) > 0;
  return (
    <div className="page-head">
      <h1>{title}</h1>
      <button
        type="button"
        className="secondary"
        aria-busy={busy}
        onClick={() => void qc.refetchQueries({ queryKey: key, type: 'active' })}
      >
        Refresh
      </button>
    </div>
  );
}
