/**
 * A labelled select of fixed choices: values, or [value, text] pairs. With `label` the label wraps
 * it (its visible name); `name` alone names it for assistive technology (e.g. a table row's control).
 */
export function Select<T extends string>({
  label,
  name,
  value,
  options,
  onChange,
  disabled,
}: {
  label?: string;
  name?: string;
  value: T;
  options: readonly T[] | readonly (readonly [T, string])[];
  onChange(v: NoInfer<T>): void;
  disabled?: boolean;
}) {
  const select = (
    <select
      aria-label={name ?? label}
      value={value}
      disabled={disabled}
      onChange={(e) => onChange(e.target.value as T)}
    >
      {options.map((o) => {
        const [v, text] = typeof o === 'string' ? [o, o] : o;
        return (
          <option key={v} value={v}>
            {text}
          </option>
        );
      })}
    </select>
  );
  return label ? (
    <label>
      {label}
      {select}
    </label>
  ) : (
    select
  );
}
