export default function Page() {
  return <h1>members</h1>;
}
