/** A daily sparkline as one SVG polyline; null days break the line. */
export function Sparkline({ values, label }: { values: (number | null)[]; label: string }) {
  const W = 160;
  const H = 32;
  const nums = values.filter((v): v is number => v !== null);
  if (nums.length === 0) return <svg width={W} height={H} role="img" aria-label={`${label}: no data`} />;
  const min = Math.min(...nums);
  const span = Math.max(...nums) - min || 1;
  const x = (i: number) => (values.length === 1 ? W / 2 : (i / (values.length - 1)) * W);
  const y = (v: number) => H - 2 - ((v - min) / span) * (H - 4);
  const runs: string[] = [];
  let run = '';
  values.forEach((v, i) => {
    if (v === null) {
      if (run) runs.push(run);
      run = '';
    } else run += `${run ? ' ' : ''}${x(i).toFixed(1)},${y(v).toFixed(1)}`;
  });
  if (run) runs.push(run);
  return (
    <svg width={W} height={H} viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`${label}: daily trend`}>
      {runs.map((pts, i) => (
        <polyline key={i} points={pts} fill="none" stroke="#3559c7" strokeWidth="1.5" />
      ))}
    </svg>
  );
}
