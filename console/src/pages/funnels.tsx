export default function Page() {
  return <h1>funnels</h1>;
}
