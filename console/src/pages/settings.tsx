export default function Page() {
  return <h1>settings</h1>;
}
