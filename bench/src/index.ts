import { benchGateOverhead } from "./gate-overhead.js";

const sections: (() => Promise<string[]>)[] = [benchGateOverhead];

console.log(`toolgate bench — node ${process.version}, ${process.platform}/${process.arch}`);
for (const section of sections) {
  console.log("");
  for (const line of await section()) console.log(line);
}
