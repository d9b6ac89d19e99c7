import { useQuery } from '@tanstack/react-query';
import { AnalyticsHead } from '../components/page-head';
import { Tile } from '../components/tile';
import { useScope } from '../session';
import { activityQuery } from './analytics-queries';

/** The app's 20 most recent changes (keys, settings, content...), as the API words them. */
export function ActivityFeed() {
  const query = useQuery(activityQuery(useScope()));
  return (
    <Tile title="Activity feed" query={query} className="wide">
      {(d) =>
        d.items.length === 0 ? (
          <p className="muted">Nothing has happened yet.</p>
        ) : (
          <ul className="feed">
            {d.items.map((i) => (
              <li key={i.id}>
                <span className={`icon icon-${i.icon}`} aria-hidden="true" />
                <span>{i.description}</span>
                <time dateTime={i.timestamp} title={i.timestamp}>
                  {i.relative_time}
                </time>
              </li>
            ))}
          </ul>
        )
      }
    </Tile>
  );
}

export default function Activity() {
  return (
    <>
      <AnalyticsHead title="Activity" />
      <ActivityFeed />
    </>
  );
}
