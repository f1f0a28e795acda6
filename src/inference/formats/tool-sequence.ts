// Streamed tool calls for client formats whose blocks cannot interleave (Messages content blocks, Responses
// output items): one block per call, opened once, its arguments streamed only while it is the open block.
// Some upstreams send every call's head first, then the arguments of each in turn (or interleaved): a call
// that cannot be streamed in order waits, its arguments kept, and is written whole at the end.
import type { ChatToolCallDelta } from "../../providers/types";
import { joinedName } from "../chat-stream";

export interface ToolCall {
  index: number;
  id: string;
  name: string;
  arguments: string;
}

interface Tracked extends ToolCall {
  opened: boolean;
  /** Whether the open call had arguments when this call's head came (calls one after another). */
  after: boolean;
  /** The count of deltas written into open calls when this call's head came. */
  mark: number;
}

/** What the format writes for a delta: the call's block opened (with its arguments so far), or arguments. */
export type ToolStep = { open: ToolCall } | { args: string };

export class ToolSequence {
  private calls = new Map<number, Tracked>();
  /** Calls seen and not yet opened, in the order their heads came. */
  private waiting: Tracked[] = [];
  private streamed = 0;

  /**
   * One delta of call `delta.index`; `openTool` is the index of the call whose block is open, if a tool
   * call's block is the open one. Null: nothing to write now.
   */
  add(delta: ChatToolCallDelta, openTool: number | undefined): ToolStep | null {
    let call = this.calls.get(delta.index);
    if (!call) {
      const open = openTool === undefined ? undefined : this.calls.get(openTool);
      call = {
        index: delta.index,
        id: "",
        name: "",
        arguments: "",
        opened: false,
        after: !open || open.arguments.length > 0,
        mark: this.streamed,
      };
      this.calls.set(delta.index, call);
      this.waiting.push(call);
    }
    if (delta.id) call.id = delta.id;
    call.name = joinedName(call.name, delta.function?.name);
    const args = delta.function?.arguments ?? "";
    if (call.opened) {
      // Arguments for a call whose block closed (they came after another call's began) cannot be written.
      if (openTool !== call.index || !args) return null;
      call.arguments += args;
      this.streamed++;
      return { args };
    }
    call.arguments += args;
    if (!this.mayOpen(call, openTool)) return null;
    this.waiting.shift();
    call.opened = true;
    this.streamed++;
    return { open: call };
  }

  /**
   * A waiting call opens when it is next, has its name, and the open block is not another call's that may
   * still get arguments: that call had arguments before this head came, none since, and this call's began.
   */
  private mayOpen(call: Tracked, openTool: number | undefined): boolean {
    if (this.waiting[0] !== call || !call.name) return false;
    if (openTool === undefined) return true;
    return call.after && call.mark === this.streamed && call.arguments.length > 0;
  }

  /** The calls never opened, in the order their heads came, each to be written whole; none wait after. */
  rest(): ToolCall[] {
    const rest = this.waiting;
    this.waiting = [];
    for (const call of rest) call.opened = true;
    return rest;
  }
}
