using Microsoft.Extensions.Time.Testing;
using PlayHouse.Core.Runtime;
using PlayHouse.Simulation.Checkers;

namespace PlayHouse.Simulation.Tests.Checkers;

public sealed class StrayReplyCheckerTests
{
    private readonly StrayReplyChecker _checker = new(new CheckerContext(new FakeTimeProvider()));

    [Fact]
    public void StrayReply_ReplyToARequestReceived_IsMatchedOnce()
    {
        _checker.OnMeshDelivered("api-1", Request("play-1", 7));
        _checker.OnMeshSent("api-1", "play-1", Reply("api-1", 7));

        Assert.False(_checker.HasViolations);
        Assert.Equal(1, _checker.RepliesMatched);
        Assert.Equal(0, _checker.UnansweredCount);
    }

    [Fact]
    public void StrayReply_ReplyThatAnswersNoRequest_ProducedAnotherMessage()
    {
        // play-1 got a late reply to its request #7 and answered it: that answer is a reply api-1 never asked for.
        _checker.OnMeshSent("play-1", "api-1", Reply("play-1", 7, ErrorCodes.HandlerNotFound));

        var violation = Assert.Single(_checker.Violations);
        Assert.Equal("node play-1 sent a reply ('Echo', seq 7, HandlerNotFound) to api-1, which sent it no such request: a reply produced another message", violation.Message);
    }

    [Fact]
    public void StrayReply_SecondReplyToOneRequest_IsAViolationButADuplicatedRequestTakesTwo()
    {
        _checker.OnMeshDelivered("api-1", Request("play-1", 7));
        _checker.OnMeshDelivered("api-1", Request("play-1", 7));
        _checker.OnMeshDelivered("api-1", Request("play-1", 8));
        _checker.OnMeshSent("api-1", "play-1", Reply("api-1", 7));
        _checker.OnMeshSent("api-1", "play-1", Reply("api-1", 7));
        Assert.False(_checker.HasViolations);

        _checker.OnMeshSent("api-1", "play-1", Reply("api-1", 7));
        _checker.OnMeshSent("api-1", "play-2", Reply("api-1", 8));

        Assert.Equal(2, _checker.ViolationCount);
        Assert.Equal(1, _checker.UnansweredCount);
    }

    [Fact]
    public void StrayReply_ReplyFromANodeThatDidNotReceiveTheRequest_IsAViolation_ThoughItsIdIsAsLongAndTheSeqTheSame()
    {
        // api-1 received play-1's request #7; api-2 (an id of the same length, so the same hash) answers #7.
        _checker.OnMeshDelivered("api-1", Request("play-1", 7));
        _checker.OnMeshSent("api-2", "play-1", Reply("api-2", 7));

        Assert.Equal(1, _checker.ViolationCount);
        Assert.Equal(0, _checker.RepliesMatched);
        Assert.Equal(1, _checker.UnansweredCount);
    }

    [Fact]
    public void StrayReply_OneWayMessagesAndRequestsSent_AreNotJudged()
    {
        _checker.OnMeshSent("play-1", "api-1", Request("play-1", 3));
        _checker.OnMeshSent("play-1", "api-1", new MeshMessage { MsgId = "Note", From = "play-1" });
        _checker.OnMeshDelivered("api-1", new MeshMessage { MsgId = "Note", From = "play-1" });

        Assert.False(_checker.HasViolations);
        Assert.Equal(0, _checker.UnansweredCount);
    }

    [Fact]
    public void StrayReply_NodeCrash_ForgetsTheRequestsItReceived()
    {
        _checker.OnMeshDelivered("api-1", Request("play-1", 7));
        _checker.OnMeshDelivered("play-1", Request("api-1", 7));

        _checker.OnNodeCrashed("api-1");
        _checker.OnMeshSent("api-1", "play-1", Reply("api-1", 7));

        Assert.Single(_checker.Violations);
        Assert.Equal(1, _checker.UnansweredCount);
    }

    [Fact]
    public void StrayReply_WhatUserCodeReceivedFromNobody_IsReportedAsAStrayReply()
    {
        _checker.OnStageMessageNobodySent("play-1", 2, "StageEcho");
        _checker.OnPushOfARequest(4, "EchoReply", 4, 17);

        Assert.Equal(
            [
                "stage play-1/2: its handler received a one-way 'StageEcho', which nobody sends one-way: a reply dispatched to a handler as a new message",
                "client 4: received push 'EchoReply' carrying the body of request #17 of client 4, while no stage pushes to it: a reply turned into a push (a ghost push)",
            ],
            _checker.Violations.Select(v => v.Message));
    }

    private static MeshMessage Request(string from, ulong msgSeq) => new() { MsgSeq = msgSeq, MsgId = "Echo", From = from };

    private static MeshMessage Reply(string from, ulong msgSeq, ushort errorCode = ErrorCodes.Success) =>
        new() { IsReply = true, MsgSeq = msgSeq, MsgId = "Echo", From = from, ErrorCode = errorCode };
}
