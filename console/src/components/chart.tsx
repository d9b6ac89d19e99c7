import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface Line {
  label: string;
  values: (number | null)[];
  dashed?: boolean;
}

const COLORS = ['#3559c7', '#e8590c', '#0ca678', '#ae3ec9', '#f59f00', '#1098ad', '#d6336c', '#5c940d'];

/** A line chart of dates (YYYY-MM-DD) on canvas with uPlot; a dashed line is a compare overlay. */
export function LineChart({ dates, lines, label }: { dates: string[]; lines: Line[]; label: string }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current!;
    const xs = dates.map((d) => Date.parse(`${d}T00:00:00Z`) / 1000);
    const plot = new uPlot(
      {
        width: el.clientWidth || 800,
        height: 260,
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
        series: [
          {},
          ...lines.map((l, i) => ({
            label: l.label,
            stroke: COLORS[(l.dashed ? i - lines.findIndex((o) => o.dashed) : i) % COLORS.length],
            dash: l.dashed ? [6, 4] : undefined,
            width: 2,
            spanGaps: false,
          })),
        ],
        axes: [{}, { size: 60 }],
      },
      [xs, ...lines.map((l) => l.values.map((v) => v ?? null))] as uPlot.AlignedData,
      el,
    );
    const resize = () => plot.setSize({ width: el.clientWidth, height: 260 });
    window.addEventListener('resize', resize);
    return () => {
      window.removeEventListener('resize', resize);
      plot.destroy();
    };
  }, [dates, lines]);
  return <div ref={box} role="img" aria-label={label} className="chart" />;
}
