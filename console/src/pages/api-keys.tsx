export default function Page() {
  return <h1>api-keys</h1>;
}
