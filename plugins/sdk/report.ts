// Storage health findings merged into the entries a check returns. The host
// keeps one health entry per (status, reason) (ABI.md "Health"), so a check
// that finds the same trouble in several places (OSTs of two file systems,
// two lost servers) says them in one entry; the entry names the file system
// when they are all of one, and none when they span several.
import { Result, STORAGE_UNREACHABLE } from "./abi";
import { clip, joinStrings, UniqueList } from "./strings";

/** One entry's findings: what `HealthReport.add` gathered for a (status, reason). */
export class MergedHealth {
  status: string;
  reason: string;
  /** Said before the findings in the health entry's message (not in the verdict's). */
  lead: string;
  parts: Array<string> = new Array<string>();
  fss: UniqueList = new UniqueList();
  constructor(status: string, reason: string, lead: string) {
    this.status = status;
    this.reason = reason;
    this.lead = lead;
  }
}

export class HealthReport {
  items: Array<MergedHealth> = new Array<MergedHealth>();

  /** A finding `text` about file system `fs` ("" when it belongs to none); `lead` counts for the first finding of its pair only. */
  add(status: string, reason: string, fs: string, text: string, lead: string = ""): void {
    let m: MergedHealth | null = null;
    for (let i = 0; i < this.items.length; i++) {
      if (this.items[i].status == status && this.items[i].reason == reason) {
        m = this.items[i];
        break;
      }
    }
    if (m === null) {
      m = new MergedHealth(status, reason, lead);
      this.items.push(m);
    }
    m.parts.push(text);
    if (fs.length > 0) m.fss.add(fs);
  }

  get length(): i32 {
    return this.items.length;
  }

  /**
   * One health entry per pair on `r` (its findings joined by "; " after its
   * lead, clipped to `maxMessage` characters when above 0), and, when there
   * is any, `r`'s verdict: fail when one is STORAGE_UNREACHABLE, warn
   * otherwise, the first pair's reason, every pair's findings in the message.
   * False (r untouched) when nothing was added.
   */
  applyTo(r: Result, maxMessage: i32 = 0): bool {
    if (this.items.length == 0) return false;
    const parts = new Array<string>();
    r.status = "warn";
    for (let i = 0; i < this.items.length; i++) {
      const it = this.items[i];
      const found = joinStrings(it.parts, "; ");
      const message = it.lead + found;
      r.health(it.status, it.reason, maxMessage > 0 ? clip(message, maxMessage) : message, it.fss.length == 1 ? it.fss.items[0] : "");
      if (it.status == STORAGE_UNREACHABLE) r.status = "fail";
      parts.push(it.reason + ": " + found);
    }
    r.reason = this.items[0].reason;
    r.message = joinStrings(parts, "; ");
    return true;
  }
}
