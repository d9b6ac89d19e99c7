declare module 'murmurhash3js' {
  const murmur: { x86: { hash32(key: string, seed?: number): number } };
  export default murmur;
}
