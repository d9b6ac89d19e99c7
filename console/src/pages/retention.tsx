export default function Page() {
  return <h1>retention</h1>;
}
